#include "recording_primitives.h"

#include "algorithms/primitives.h"

namespace hora::schedule_test {

static_assert(algorithms::Primitives<RecordingPrimitives>);

const char* stageName(Stage stage) {
  switch (stage) {
    case Stage::Raw: return "raw";
    case Stage::Pre: return "pre()-multiplied";
    case Stage::Final: return "post()-finalized";
  }
  return "?";
}

const char* primitiveName(Primitive primitive) {
  switch (primitive) {
    case Primitive::Send: return "send";
    case Primitive::Recv: return "recv";
    case Primitive::RecvReduceSend: return "recvReduceSend";
    case Primitive::RecvReduceCopy: return "recvReduceCopy";
    case Primitive::RecvReduceCopySend: return "recvReduceCopySend";
    case Primitive::RecvCopySend: return "recvCopySend";
    case Primitive::CopySend: return "copySend";
    case Primitive::LocalReduceCopy: return "localReduceCopy";
    case Primitive::LocalCopy: return "localCopy";
    case Primitive::RecvReduceCopyAll: return "recvReduceCopyAll";
  }
  return "?";
}

Step& RecordingPrimitives::add(Primitive primitive, std::size_t count) {
  Step& step = steps_.emplace_back();
  step.primitive = primitive;
  step.size = count;
  return step;
}

// Each primitive below is its line of the table in algorithms/primitives.h,
// spelled as the fields of a Step.

void RecordingPrimitives::send(int to, std::size_t inOffset, std::size_t count) {
  Step& s = add(Primitive::Send, count);  // to <- pre(in[i..])
  s.readsInput = s.preInput = true;
  s.in = inOffset;
  s.sends = true;
  s.to = to;
}

void RecordingPrimitives::recv(int from, std::size_t outOffset, std::size_t count) {
  Step& s = add(Primitive::Recv, count);  // out[o..] <- from
  s.receives = true;
  s.from = from;
  s.writesOutput = true;
  s.out = outOffset;
}

void RecordingPrimitives::recvReduceSend(int from, int to, std::size_t inOffset,
                                         std::size_t count) {
  Step& s = add(Primitive::RecvReduceSend, count);  // to <- pre(in[i..]) (+) from
  s.receives = true;
  s.from = from;
  s.readsInput = s.preInput = true;
  s.in = inOffset;
  s.sends = true;
  s.to = to;
}

void RecordingPrimitives::recvReduceCopy(int from, std::size_t inOffset, std::size_t outOffset,
                                         std::size_t count) {
  Step& s = add(Primitive::RecvReduceCopy, count);  // out[o..] <- post(pre(in[i..]) (+) from)
  s.receives = true;
  s.from = from;
  s.readsInput = s.preInput = true;
  s.in = inOffset;
  s.post = true;
  s.writesOutput = true;
  s.out = outOffset;
}

void RecordingPrimitives::recvReduceCopySend(int from, int to, std::size_t inOffset,
                                             std::size_t outOffset, std::size_t count) {
  // out[o..] <- post(pre(in[i..]) (+) from); to <- out[o..]
  Step& s = add(Primitive::RecvReduceCopySend, count);
  s.receives = true;
  s.from = from;
  s.readsInput = s.preInput = true;
  s.in = inOffset;
  s.post = true;
  s.writesOutput = true;
  s.out = outOffset;
  s.sends = true;
  s.to = to;
}

void RecordingPrimitives::recvCopySend(int from, int to, std::size_t outOffset,
                                       std::size_t count) {
  Step& s = add(Primitive::RecvCopySend, count);  // out[o..] <- from; to <- out[o..]
  s.receives = true;
  s.from = from;
  s.writesOutput = true;
  s.out = outOffset;
  s.sends = true;
  s.to = to;
}

void RecordingPrimitives::copySend(int to, std::size_t inOffset, std::size_t outOffset,
                                   std::size_t count) {
  Step& s = add(Primitive::CopySend, count);  // out[o..] <- in[i..]; to <- in[i..]
  s.readsInput = true;
  s.in = inOffset;
  s.writesOutput = true;
  s.out = outOffset;
  s.sends = true;
  s.to = to;
}

void RecordingPrimitives::localReduceCopy(std::size_t inOffset, std::size_t outOffset,
                                          std::size_t count) {
  Step& s = add(Primitive::LocalReduceCopy, count);  // out[o..] <- post(pre(in[i..]))
  s.readsInput = s.preInput = true;
  s.in = inOffset;
  s.post = true;
  s.writesOutput = true;
  s.out = outOffset;
}

void RecordingPrimitives::localCopy(std::size_t inOffset, std::size_t outOffset,
                                    std::size_t count) {
  Step& s = add(Primitive::LocalCopy, count);  // out[o..] <- in[i..]
  s.readsInput = true;
  s.in = inOffset;
  s.writesOutput = true;
  s.out = outOffset;
}

void RecordingPrimitives::recvReduceCopyAll(const int* order, int nranks, int self,
                                            std::size_t inOffset, std::size_t outOffset,
                                            std::size_t count) {
  // out[o..] <- post(reduction over order[0..k) of pre(in[i..]) for self and
  // one message from every other listed rank).
  Step& s = add(Primitive::RecvReduceCopyAll, count);
  s.fanIn.assign(order, order + nranks);
  s.fanInSelf = self;
  s.preInput = true;
  s.in = inOffset;
  s.post = true;
  s.writesOutput = true;
  s.out = outOffset;
}

}  // namespace hora::schedule_test
