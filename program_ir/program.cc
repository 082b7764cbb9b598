#include "program_ir/program.h"

namespace ctp {

Program Program::with_global_block() {
  Program p;
  p.blocks.emplace_back(0, -1);
  return p;
}

Block& Program::global_block() { return block(0); }
const Block& Program::global_block() const { return block(0); }

Block& Program::block(int32_t idx) {
  if (idx < 0 || static_cast<std::size_t>(idx) >= blocks.size())
    throw Error("program has no block " + std::to_string(idx) + " (it has " +
                std::to_string(blocks.size()) + ")");
  return blocks[static_cast<std::size_t>(idx)];
}

const Block& Program::block(int32_t idx) const {
  return const_cast<Program*>(this)->block(idx);
}

Block& Program::add_block(int32_t parent_idx) {
  return blocks.emplace_back(static_cast<int32_t>(blocks.size()), parent_idx);
}

std::size_t Program::op_count() const {
  std::size_t n = 0;
  for (const Block& b : blocks) n += b.op_count();
  return n;
}

}  // namespace ctp
