#include "case_matrix.h"

namespace hora_coll_test {

bool isPowerOfTwo(int value) { return value > 0 && (value & (value - 1)) == 0; }

std::vector<CollectiveCase> buildCases(const CaseMatrix& matrix, int nranks) {
  std::vector<ncclDataType_t> types = matrix.types;
  if (types.empty())
    for (const auto& type : allElementTypes()) types.push_back(type.id);
  const std::vector<Reduction> reductions =
      matrix.reductions.empty() ? allReductions() : matrix.reductions;
  // Roots other than 0 first: a schedule that assumes root 0 shows at once.
  std::vector<int> roots = {nranks - 1};
  if (nranks > 2) roots.push_back(1);
  if (nranks > 1) roots.push_back(0);

  std::vector<CollectiveCase> cases;
  unsigned variant = 0;
  for (Collective collective : matrix.collectives) {
    const std::vector<Reduction> ops =
        isReducing(collective) ? reductions : std::vector<Reduction>{Reduction::Sum};
    for (ncclDataType_t typeId : types) {
      const ElementType& type = elementType(typeId);
      for (Reduction reduction : ops) {
        if (isReducing(collective) && reduction == Reduction::Avg && type.isFloating() &&
            !isPowerOfTwo(nranks))
          continue;
        for (std::size_t count : matrix.counts) {
          CollectiveCase c;
          c.collective = collective;
          c.type = typeId;
          c.reduction = reduction;
          c.count = count;
          if (matrix.varyPlacement) {
            c.inPlace = supportsInPlace(collective) && (variant & 1) != 0;
            c.unaligned = (variant & 2) != 0;
            c.root = roots[(variant >> 2) % roots.size()];
            ++variant;
          }
          c.seed = matrix.seed * 1000003 + cases.size();
          cases.push_back(c);
        }
      }
    }
  }
  return cases;
}

}  // namespace hora_coll_test
