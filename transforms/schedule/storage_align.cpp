// storage_align(block, buffer_index, axis, factor, offset): TVM Schedule.storage_align.
// Asks that the stride of dimension `axis` of the buffer the block writes at `buffer_index`
// be `factor * k + offset` (padding rows against shared-memory bank conflicts). A layout
// hint only: it never changes what is computed. Recorded as TVM records it, in the block
// annotation "buffer_dim_align" (a list of [buffer_index, axis, factor, offset]); the
// backends keep dense row-major layouts and do not pad (docs/schedule.md).
#include "transforms/schedule/prims.h"

namespace tirc::sched {

void prim_storage_align(ScheduleState& st, const ScheduleInstr& ins) {
  expect_args(ins, 5, 5);
  expect_results(ins, 0);
  Stmt bs = arg_block(st, ins, 0);
  const BlockNode* b = block_of(bs);
  int64_t idx = arg_int(ins, 1, "the buffer index");
  int64_t axis = arg_int(ins, 2, "the axis");
  int64_t factor = arg_int(ins, 3, "the factor");
  int64_t offset = arg_int(ins, 4, "the offset");
  if (idx < 0 || idx >= static_cast<int64_t>(b->writes.size()))
    refuse("block " + b->name + " has " + std::to_string(b->writes.size()) + " write region" +
           (b->writes.size() == 1 ? "" : "s") + "; index " + std::to_string(idx) + " is out of range");
  const Buffer& buf = b->writes[static_cast<size_t>(idx)].buffer;
  int64_t nd = static_cast<int64_t>(buf->ndim());
  if (axis < -nd || axis >= nd)
    refuse("axis " + std::to_string(axis) + " is out of range for buffer " + buf->name + " (" +
           std::to_string(nd) + " dimension" + (nd == 1 ? "" : "s") + ")");
  if (axis < 0) axis += nd;
  if (factor <= 0) refuse("factor " + std::to_string(factor) + " is not positive");
  if (offset < 0 || offset >= factor)
    refuse("offset " + std::to_string(offset) + " is not in [0, factor)");
  std::string entry = "[" + std::to_string(idx) + ", " + std::to_string(axis) + ", " + std::to_string(factor) +
                      ", " + std::to_string(offset) + "]";
  st.replace(bs.get(), update_realize(bs, [&](BlockRealizeNode& r) {
               r.block = update_block(r.block, [&](BlockNode& n) {
                 auto it = n.annotations.find("buffer_dim_align");
                 std::string list;
                 if (it != n.annotations.end() && it->second.size() >= 4 && it->second.front() == '"') {
                   // "[[...], [...]]": insert before the closing bracket of the list.
                   list = it->second.substr(1, it->second.size() - 3) + ", " + entry + "]";
                 } else {
                   list = "[" + entry + "]";
                 }
                 n.annotations["buffer_dim_align"] = "\"" + list + "\"";
               });
             }));
}

}  // namespace tirc::sched
