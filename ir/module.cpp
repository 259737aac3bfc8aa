#include "ir/module.h"

#include "ir/error.h"

namespace tirc {

const BlockNode& root_block(const FunctionNode& f) {
  auto* br = f.body.as<BlockRealizeNode>();
  if (!br) throw Error("function " + f.name + " has no root block");
  return *br->block.get();
}

Function Module::find_func(const std::string& name) const {
  for (auto& f : funcs)
    if (f->name == name) return f;
  return nullptr;
}

void Module::add_func(Function f) {
  for (auto& g : funcs)
    if (g->name == f->name) {
      g = std::move(f);
      return;
    }
  funcs.push_back(std::move(f));
  order.emplace_back(0, funcs.size() - 1);
}

}  // namespace tirc
