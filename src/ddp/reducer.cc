#include "hora/ddp/reducer.h"

#include <algorithm>
#include <exception>
#include <sstream>
#include <string>
#include <utility>

#include "bucket_memory.h"
#include "works.h"

namespace hora::ddp {

namespace {

// What a failed Work threw, as hora reports it: a hora::Error as it is;
// anything else came from a hook or process group of the program's, not
// from hora, and is a misuse.
Error asHoraError(const std::exception_ptr& failure) {
  try {
    std::rethrow_exception(failure);
  } catch (const Error& error) {
    return error;
  } catch (const std::exception& error) {
    return Error(ErrorKind::InvalidUsage, error.what());
  } catch (...) {
    return Error(ErrorKind::InvalidUsage,
                 "an exception that is not a std::exception (thrown by the communication hook or the process group)");
  }
}

bool isGradientType(DataType type) {
  return type == DataType::Float32 || type == DataType::Float64 || type == DataType::Float16 ||
         type == DataType::Bfloat16;
}

// What each rank contributes to the layout check: the fingerprint decides,
// the rest makes the error message useful.
struct LayoutSummary {
  std::uint64_t fingerprint;
  std::uint64_t parameters;
  std::uint64_t elements;
  std::uint64_t buckets;

  std::string describe() const {
    std::ostringstream text;
    text << parameters << (parameters == 1 ? " parameter (" : " parameters (") << elements
         << " elements) in " << buckets << (buckets == 1 ? " bucket" : " buckets")
         << ", fingerprint " << std::hex << fingerprint;
    return text.str();
  }
  bool operator==(const LayoutSummary&) const = default;
};
constexpr std::size_t kSummaryWords = 4;
static_assert(sizeof(LayoutSummary) == kSummaryWords * sizeof(std::uint64_t));

// Why a C++ element type of `elementSize` bytes (floating or not) cannot
// view a gradient of `type`; empty when it can.
std::string elementTypeMismatch(DataType type, std::size_t elementSize, bool isFloating) {
  const bool matches = isFloating ? elementSize == dataTypeSize(type) &&
                                        (type == DataType::Float32 || type == DataType::Float64)
                                  : elementSize == 2 && (type == DataType::Float16 ||
                                                         type == DataType::Bfloat16);
  if (matches) return {};
  return std::string("gradient of type ") + dataTypeName(type) + " viewed as a C++ type of " +
         std::to_string(elementSize) + " bytes" + (isFloating ? "" : " (not floating point)") +
         "; use float, double, or std::uint16_t for half and bfloat16";
}

}  // namespace

void GradientView::checkElementType(std::size_t elementSize, bool isFloating) const {
  const std::string mismatch = elementTypeMismatch(type, elementSize, isFloating);
  if (!mismatch.empty()) throw Error(ErrorKind::InvalidArgument, mismatch);
}

struct Reducer::State {
  struct Location {
    std::size_t bucket = 0;
    std::size_t offset = 0;  // elements
  };

  std::shared_ptr<ProcessGroup> group;
  BucketCaps caps;
  std::shared_ptr<CommHook> hook;
  std::vector<Parameter> parameters;
  std::vector<Bucket> buckets;         // reduction order
  std::vector<BucketBuffer> storage;   // one flat buffer per bucket
  std::vector<Location> locations;     // per parameter

  bool syncEnabled = true;
  bool firstStepBegun = false;
  bool stepActive = false;
  bool stepSynced = true;              // the mode captured at the step's first markReady
  std::vector<bool> marked;            // per parameter, this step
  std::vector<std::size_t> unmarked;   // per bucket, this step
  std::size_t nextBucketToLaunch = 0;
  bool launchFailed = false;  // a bucket's launch failed: this step launches no more
  std::vector<WorkPtr> works;          // per bucket, this step
  std::string failure;                 // set once a reduction failed

  std::string prefix() const { return "rank " + std::to_string(group->rank()) + ": "; }

  std::string describeParameter(std::size_t index) const {
    const std::string& name = parameters[index].name;
    return (name.empty() ? std::string("parameter") : "parameter '" + name + "'") + " (index " +
           std::to_string(index) + ")";
  }

  [[noreturn]] void fail(ErrorKind kind, const std::string& what) const {
    throw Error(kind, prefix() + what);
  }

  void checkIndex(std::size_t index, const char* call) const {
    if (index >= parameters.size())
      fail(ErrorKind::InvalidArgument, std::string(call) + ": parameter index " +
                                           std::to_string(index) + " is out of range (" +
                                           std::to_string(parameters.size()) +
                                           " parameters registered)");
  }

  void checkParameter(const Parameter& parameter, std::size_t index) const {
    const std::string what = parameter.name.empty() ? "parameter " + std::to_string(index)
                                                    : "parameter '" + parameter.name + "'";
    if (!isGradientType(parameter.type))
      fail(ErrorKind::InvalidArgument, what + " has type " + dataTypeName(parameter.type) +
                                           "; gradients must be float, double, half or bfloat16");
    if (parameter.count != 0 && parameter.data == nullptr)
      fail(ErrorKind::InvalidArgument,
           what + " has " + std::to_string(parameter.count) + " elements but no data");
    if (parameter.memory != MemoryKind::Host && parameter.memory != MemoryKind::Device)
      fail(ErrorKind::InvalidArgument, what + " has memory kind " +
                                           std::to_string(static_cast<int>(parameter.memory)) +
                                           ", which is neither MemoryKind::Host nor MemoryKind::Device");
    try {
      bucketMemoryFor(parameter.memory);  // throws for memory this build or process cannot use
    } catch (const Error& error) {
      fail(error.kind(), what + ": " + error.what());
    }
  }

  void checkUsable() const {
    if (!failure.empty())
      fail(ErrorKind::InvalidUsage, "the reducer cannot continue after a failed step: " + failure);
  }

  // Lays the buckets out anew for the current parameter list, carrying over
  // gradient values already written.
  void rebuildBuckets() {
    std::vector<ParameterShape> shapes;
    shapes.reserve(parameters.size());
    for (const auto& parameter : parameters) shapes.push_back(parameter.shape());
    std::vector<Bucket> newBuckets = computeBucketLayout(shapes, caps);

    std::vector<BucketBuffer> newStorage;
    std::vector<Location> newLocations(parameters.size());
    newStorage.reserve(newBuckets.size());
    for (std::size_t b = 0; b < newBuckets.size(); ++b) {
      const Bucket& bucket = newBuckets[b];
      newStorage.emplace_back(bucketMemoryFor(bucket.memory), bucket.bytes());
      for (std::size_t k = 0; k < bucket.parameters.size(); ++k)
        newLocations[bucket.parameters[k]] = {b, bucket.offsets[k]};
    }
    // The parameters both layouts hold: a registration adds one, and its
    // rollback (the layout check failed) removes it again.
    const std::size_t kept = std::min(locations.size(), parameters.size());
    for (std::size_t i = 0; i < kept; ++i) {
      const std::size_t bytes = parameters[i].count * dataTypeSize(parameters[i].type);
      newStorage[newLocations[i].bucket].memory().copy(
          gradientAddress(newStorage, newBuckets, newLocations[i]),
          gradientAddress(storage, buckets, locations[i]), bytes);
    }
    buckets = std::move(newBuckets);
    storage = std::move(newStorage);
    locations = std::move(newLocations);
    marked.assign(parameters.size(), false);
    unmarked.assign(buckets.size(), 0);
    works.assign(buckets.size(), nullptr);
  }

  static void* gradientAddress(const std::vector<BucketBuffer>& storage,
                               const std::vector<Bucket>& buckets, Location location) {
    auto* base = static_cast<std::byte*>(storage[location.bucket].data());
    return base + location.offset * dataTypeSize(buckets[location.bucket].type);
  }

  void* gradientAddress(std::size_t index) const {
    return gradientAddress(storage, buckets, locations[index]);
  }

  // Every rank contributes a summary of its layout; all compare them, so all
  // throw the same error together instead of hanging in mismatched collectives.
  void verifyLayoutAcrossRanks() {
    std::vector<ParameterShape> shapes;
    std::uint64_t elements = 0;
    for (const auto& parameter : parameters) {
      shapes.push_back(parameter.shape());
      elements += parameter.count;
    }
    const LayoutSummary mine{layoutFingerprint(shapes, buckets), parameters.size(), elements,
                             buckets.size()};
    std::vector<LayoutSummary> all(static_cast<std::size_t>(group->size()));
    waitFor(group->allGather(&mine, all.data(), kSummaryWords, DataType::Uint64), "allGather");

    bool allAgree = true;
    for (const auto& summary : all) allAgree = allAgree && summary == all[0];
    if (allAgree) return;
    std::ostringstream text;
    text << "the gradient bucket layout differs between ranks: rank 0 has "
         << all[0].describe();
    for (std::size_t r = 1; r < all.size(); ++r)
      if (!(all[r] == all[0])) text << "; rank " << r << " has " << all[r].describe();
    text << ". Every rank must register the same parameters (count and type) in the same "
            "order, with the same bucket caps";
    fail(ErrorKind::InvalidUsage, text.str());
  }

  // Rank 0's values to everyone, one broadcast per bucket: pack the
  // parameters into the (same-shaped) gradient buckets, broadcast, unpack.
  void broadcastAllParameters() {
    if (group->size() == 1) return;
    for (std::size_t i = 0; i < parameters.size(); ++i)
      storage[locations[i].bucket].memory().copy(gradientAddress(i), parameters[i].data,
                                                 parameters[i].count *
                                                     dataTypeSize(parameters[i].type));
    std::vector<WorkPtr> pending;
    for (std::size_t b = 0; b < buckets.size(); ++b)
      if (buckets[b].count != 0)
        pending.push_back(group->broadcast(storage[b].data(), buckets[b].count, buckets[b].type, 0));
    waitForBroadcasts(pending, "broadcast of the parameters from rank 0");
    for (std::size_t i = 0; i < parameters.size(); ++i)
      storage[locations[i].bucket].memory().copy(parameters[i].data, gradientAddress(i),
                                                 parameters[i].count *
                                                     dataTypeSize(parameters[i].type));
    for (std::size_t b = 0; b < buckets.size(); ++b)
      storage[b].memory().zero(storage[b].data(), storage[b].bytes());
  }

  // A ProcessGroup is the user's to implement: one whose collective gives
  // no Work is refused by name, not dereferenced.
  void waitFor(const WorkPtr& work, const char* collective) {
    if (!work)
      fail(ErrorKind::InvalidArgument, std::string("the process group's ") + collective +
                                           " returned no Work (a null WorkPtr)");
    work->wait();
  }

  void waitForBroadcasts(const std::vector<WorkPtr>& pending, const std::string& what) {
    std::exception_ptr first;
    for (const auto& work : pending) {
      try {
        waitFor(work, "broadcast");
      } catch (...) {
        if (!first) first = std::current_exception();
      }
    }
    if (!first) return;
    const Error error = asHoraError(first);
    fail(error.kind(), what + " failed: " + error.what());
  }

  void beginStep() {
    stepActive = true;
    firstStepBegun = true;
    stepSynced = syncEnabled;
    marked.assign(parameters.size(), false);
    for (std::size_t b = 0; b < buckets.size(); ++b) unmarked[b] = buckets[b].parameters.size();
    nextBucketToLaunch = 0;
    launchFailed = false;
    works.assign(buckets.size(), nullptr);
  }

  // Starts every complete bucket whose predecessors have all started: a
  // bucket completed early waits for its turn, so all ranks issue the
  // collectives in the same order whatever order their gradients arrive in.
  void launchReadyBuckets() {
    while (!launchFailed && nextBucketToLaunch < buckets.size() && unmarked[nextBucketToLaunch] == 0)
      launch(nextBucketToLaunch++);
  }

  void launch(std::size_t b) {
    const Bucket& bucket = buckets[b];
    try {
      if (bucket.count == 0) {
        works[b] = std::make_shared<CompletedWork>();
        return;
      }
      // Empty buckets never reach the hook: the last it sees is the last
      // bucket with elements.
      std::size_t last = buckets.size() - 1;
      while (last > b && buckets[last].count == 0) --last;
      const GradBucket view{b, b == last, storage[b].data(), bucket.count, bucket.type, bucket.memory};
      works[b] = hook->run(*group, view);
      // A null Work would be skipped by finish(), leaving this rank's own
      // gradients where the mean belongs: a failure, reported there.
      if (!works[b])
        throw Error(ErrorKind::InvalidUsage, "the communication hook '" + hook->name() +
                                                 "' returned no Work (a null WorkPtr) for this bucket");
    } catch (...) {
      // Reported by finish(), where the caller expects collective failures.
      works[b] = std::make_shared<FailedWork>(std::current_exception());
      abandonStep();
    }
  }

  // This rank's collective for a bucket was never issued, while its peers
  // issue theirs: launching the next bucket would pair it with their
  // previous one, and where the shapes agree their averages would mix two
  // buckets without an error. So nothing more is launched in this step, and
  // the group is revoked, so that the peers fail at once, naming this rank,
  // and this rank's later calls are refused.
  void abandonStep() {
    launchFailed = true;
    try {
      group->revoke();
    } catch (...) {
      // The step has failed already; finish() reports why.
    }
  }

  std::string describeBucket(std::size_t b) const {
    return "gradient bucket " + std::to_string(b) + " (" + std::to_string(buckets[b].count) +
           " elements of " + dataTypeName(buckets[b].type) + ", hook " + hook->name() + ")";
  }

  // Waits for every launched reduction; the first failure is remembered and
  // thrown once all have ended, so no collective still writes into a bucket
  // when the caller sees the error.
  void waitForReductions() {
    std::exception_ptr firstError;
    std::size_t failedBucket = 0;
    for (std::size_t b = 0; b < works.size(); ++b) {
      if (!works[b]) continue;
      try {
        works[b]->wait();
      } catch (...) {
        if (!firstError) {
          firstError = std::current_exception();
          failedBucket = b;
        }
      }
      works[b] = nullptr;
    }
    if (!firstError) return;
    const Error error = asHoraError(firstError);
    failure = "reduction of " + describeBucket(failedBucket) + " failed: " + error.what();
    // The failed rank is kept: the caller may shrink past it.
    throw Error(error.kind(), prefix() + failure, error.failedRank());
  }
};

Reducer::Reducer(Communicator& communicator, std::vector<Parameter> parameters,
                 ReducerOptions options)
    : Reducer(wrapCommunicator(communicator), std::move(parameters), std::move(options)) {}

Reducer::Reducer(std::shared_ptr<ProcessGroup> group, std::vector<Parameter> parameters,
                 ReducerOptions options)
    : state_(std::make_unique<State>()) {
  if (!group) throw Error(ErrorKind::InvalidArgument, "Reducer: the process group is null");
  State& s = *state_;
  s.group = std::move(group);
  s.caps = options.caps;
  s.hook = options.hook ? std::move(options.hook) : makeAllReduceHook();
  for (std::size_t i = 0; i < parameters.size(); ++i) s.checkParameter(parameters[i], i);
  s.parameters = std::move(parameters);
  s.rebuildBuckets();
  s.verifyLayoutAcrossRanks();
  s.broadcastAllParameters();
}

void Reducer::continueWith(Communicator& communicator) { continueWith(wrapCommunicator(communicator)); }

void Reducer::continueWith(std::shared_ptr<ProcessGroup> group) {
  if (!group) throw Error(ErrorKind::InvalidArgument, "Reducer::continueWith: the process group is null");
  State& s = *state_;
  for (auto& work : s.works) {
    if (!work) continue;
    try {
      work->wait();
    } catch (...) {
      // The failed step's own error was reported by finish().
    }
    work = nullptr;
  }
  s.group = std::move(group);
  s.failure.clear();
  s.stepActive = false;
  for (std::size_t b = 0; b < s.buckets.size(); ++b) s.storage[b].memory().zero(s.storage[b].data(), s.storage[b].bytes());
  s.verifyLayoutAcrossRanks();
  s.broadcastAllParameters();
}

Reducer::~Reducer() {
  if (!state_) return;
  for (auto& work : state_->works) {
    if (!work) continue;
    try {
      work->wait();
    } catch (...) {
      // The step is being abandoned; its error has no one to go to.
    }
  }
}

std::size_t Reducer::registerParameter(const Parameter& parameter) {
  State& s = *state_;
  const std::size_t index = s.parameters.size();
  if (s.firstStepBegun)
    s.fail(ErrorKind::InvalidUsage,
           "cannot register " +
               (parameter.name.empty() ? std::string("a parameter")
                                       : "parameter '" + parameter.name + "'") +
               " after the first step began: the bucket layout is fixed by then; register "
               "every parameter before the first markReady()");
  s.checkParameter(parameter, index);
  s.parameters.push_back(parameter);
  try {
    s.rebuildBuckets();
    s.verifyLayoutAcrossRanks();
  } catch (...) {
    s.parameters.pop_back();
    s.rebuildBuckets();
    throw;
  }
  if (s.group->size() > 1 && parameter.count != 0)
    s.waitForBroadcasts({s.group->broadcast(parameter.data, parameter.count, parameter.type, 0)},
              "broadcast of " + s.describeParameter(index) + " from rank 0");
  return index;
}

std::size_t Reducer::numParameters() const { return state_->parameters.size(); }

const Parameter& Reducer::parameter(std::size_t index) const {
  state_->checkIndex(index, "parameter()");
  return state_->parameters[index];
}

const std::vector<Bucket>& Reducer::buckets() const { return state_->buckets; }
int Reducer::rank() const { return state_->group->rank(); }
int Reducer::worldSize() const { return state_->group->size(); }

void Reducer::checkGradientElement(std::size_t index, std::size_t elementSize, bool isFloating) const {
  const State& s = *state_;
  const std::string mismatch = elementTypeMismatch(s.parameters[index].type, elementSize, isFloating);
  if (!mismatch.empty())
    s.fail(ErrorKind::InvalidArgument, "gradientAs(): " + s.describeParameter(index) + ": " + mismatch);
}

GradientView Reducer::gradient(std::size_t index) const {
  const State& s = *state_;
  s.checkIndex(index, "gradient()");
  const Parameter& parameter = s.parameters[index];
  return {s.gradientAddress(index), parameter.count, parameter.type, parameter.memory};
}

void Reducer::zeroGradients() {
  State& s = *state_;
  if (s.stepActive)
    s.fail(ErrorKind::InvalidUsage,
           "zeroGradients() called in the middle of a step (before finish())");
  for (auto& buffer : s.storage) buffer.memory().zero(buffer.data(), buffer.bytes());
}

void Reducer::markReady(std::size_t index) {
  State& s = *state_;
  s.checkUsable();
  s.checkIndex(index, "markReady()");
  if (!s.stepActive) s.beginStep();
  if (s.marked[index]) {
    // Every gradient marked: the step waits for finish(); the program has
    // most likely gone on to the next step without calling it.
    if (std::all_of(s.marked.begin(), s.marked.end(), [](bool marked) { return marked; }))
      s.fail(ErrorKind::InvalidUsage, "the gradient of " + s.describeParameter(index) +
                                          " was marked ready again, but every gradient of this step is marked "
                                          "already: call finish() to end a step before the next one");
    s.fail(ErrorKind::InvalidUsage, "the gradient of " + s.describeParameter(index) +
                                        " was marked ready twice in one step");
  }
  s.marked[index] = true;
  --s.unmarked[s.locations[index].bucket];
  if (s.stepSynced) s.launchReadyBuckets();
}

void Reducer::finish() {
  State& s = *state_;
  s.checkUsable();
  if (s.parameters.empty()) return;
  std::size_t missing = 0;
  std::size_t firstMissing = 0;
  for (std::size_t i = 0; i < s.parameters.size(); ++i)
    if (!(s.stepActive && s.marked[i]) && missing++ == 0) firstMissing = i;
  if (missing == s.parameters.size() && !s.stepActive)
    s.fail(ErrorKind::InvalidUsage, "finish() called with no step in progress (no gradient marked ready since the "
                                    "last finish())");
  if (missing != 0)
    s.fail(ErrorKind::InvalidUsage,
           "finish() called while " + std::to_string(missing) + " of " +
               std::to_string(s.parameters.size()) + " gradients are not marked ready (first: " +
               s.describeParameter(firstMissing) + ")");
  s.stepActive = false;
  if (s.stepSynced) s.waitForReductions();
}

Reducer::NoSyncGuard::NoSyncGuard(Reducer& reducer)
    : reducer_(reducer), previous_(reducer.state_->syncEnabled) {
  reducer_.state_->syncEnabled = false;
}

Reducer::NoSyncGuard::~NoSyncGuard() { reducer_.state_->syncEnabled = previous_; }

bool Reducer::syncEnabled() const { return state_->syncEnabled; }

void Reducer::setCommHook(std::shared_ptr<CommHook> hook) {
  State& s = *state_;
  if (s.stepActive)
    s.fail(ErrorKind::InvalidUsage, "setCommHook() called in the middle of a step");
  s.hook = hook ? std::move(hook) : makeAllReduceHook();
}

}  // namespace hora::ddp
