// Building blocks the transpile passes share: where an op is (for error
// messages), Paddle's create_var and Operator-construction rules, and checked
// reads of op roles, op_role_var pairs and slots.
#pragma once
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "program_ir/block.h"
#include "program_ir/op_packing.h"
#include "program_ir/op_role.h"
#include "program_ir/program.h"
#include "program_ir/source_location.h"

namespace ctp {

// An op of the block a pass rewrites: "<pass>: block 0, op 12 'mul_grad'".
// `index` is the op's position when the rewrite step that reads it began, as
// the reference's enumerate(block.ops) numbers it.
struct OpSite {
  std::string_view pass;
  const Block& block;
  std::size_t index;
  const Op& op;
  SourceLocation location() const;
  [[noreturn]] void fail(std::string what) const;
};

// Paddle's block.vars[name] / block.var(name) on the op's own block: throws
// ctp::Error naming the site, the role of the name (e.g. "op_role_var param")
// and the var when the block does not declare it.
const Var& require_var(const OpSite& site, const std::string& name, std::string_view role);
// require_var's lookup and error, decoding nothing (Block::find_var_entry):
// for a rewrite that needs no more than the name and is_distributed.
Block::VarEntry require_var_entry(const OpSite& site, const std::string& name,
                                  std::string_view role);
// require_var's lookup and error, as a copy that leaves a var held as bytes
// so (Block::copy_var): for a rewrite that reads a field or two (the shape)
// of each parameter.
Var require_var_copy(const OpSite& site, const std::string& name, std::string_view role);

// The op's role bits (nullopt without op_role) and op_role_var pairs, with
// errors that name the site.
std::optional<int64_t> op_role_at(const OpSite& site);
bool is_backward_at(const OpSite& site);
bool is_optimizer_at(const OpSite& site);
bool is_loss_grad_at(const OpSite& site);
std::vector<ParamGrad> param_grad_pairs_at(const OpSite& site);
// op.input(slot)[0] / op.output(slot)[0]: throws when the slot is missing or
// empty. Decodes none of the op's slots (Op::input_args).
std::string first_input(const OpSite& site, std::string_view slot);
std::string first_output(const OpSite& site, std::string_view slot);
// A copy of op.attr(name): throws when missing. Decodes none of the op's
// other attributes (Op::attr_value: an op Paddle wrote carries a call stack
// of dozens of strings, which a rewrite that reads a few attributes of each
// of a large program's adam ops would otherwise decode for nothing).
Attribute require_attr(const OpSite& site, std::string_view name);

// Paddle's block.create_var(...): returns the existing var of that name when it
// agrees with every field given (Paddle raises ValueError otherwise, and so do
// we), else declares a new one. stop_gradient is always written, as Paddle's
// Variable constructor does. Returns the var's name. A new var is held as
// its bytes where the block holds the vars it was read with so
// (add_packed_var, program_ir/var_packing.h): look it up to read it.
struct VarRequest {
  std::string name;
  VarKind type = VarKind::LOD_TENSOR;
  std::optional<std::vector<int64_t>> shape;
  std::optional<DataType> dtype;
  std::optional<bool> persistable;
  bool stop_gradient = false;
};
std::string create_var(Block& block, const VarRequest& request, std::string_view pass);
// The same, taking the request's name and shape instead of copying them (a
// rewrite that adds several vars per parameter: all_gather a piece per rank).
std::string create_var(Block& block, VarRequest&& request, std::string_view pass);
// create_var of `alike` under each of `names` in turn (alike.name is not
// used), the new vars' bytes encoded once: a rewrite that adds a var per
// rank per parameter (all_gather's pieces, four times a large program's
// own vars).
void create_vars(Block& block, std::span<const std::string> names, const VarRequest& alike,
                 std::string_view pass);

// An op as Paddle's Operator constructor makes it from append_op/_insert_op
// arguments: slots and attributes in the order given, and op_role = Forward
// (the program's default role) appended when the caller gave none. The op
// comes packed (program_ir/op_packing.h): a rewrite of a large program adds
// one or more per parameter.
Op make_op(std::string_view type, std::vector<Slot> inputs, std::vector<Slot> outputs,
           std::vector<NamedAttribute> attrs);

// make_op from slots the caller keeps: nothing is copied to build it (a
// rewrite adds one per parameter whose slots name many vars, as all_gather's
// split names a piece per rank, which the adam copies read after).
Op make_op_from_views(std::string_view type, std::span<const Slot> inputs,
                      std::span<const Slot> outputs, std::initializer_list<NamedAttribute> attrs);

// make_op for an op whose slots each name one var, from views: nothing is
// copied to build it (a rewrite adds several per parameter: local_sgd six).
Op make_var_op(std::string_view type, std::initializer_list<VarSlot> inputs,
               std::initializer_list<VarSlot> outputs,
               std::initializer_list<NamedAttribute> attrs);

// The same single var as input X and output Out, as most collective ops use.
Op make_in_place_op(std::string_view type, std::string_view var,
                    std::initializer_list<NamedAttribute> attrs);

// Paddle's unique_name.generate(key) in a fresh process: key_0, key_1, ...,
// the first that neither program declares.
std::string unique_var_name(const Program& startup, const Program& main, const std::string& key);

// A persistable, stop_gradient var declared in both programs, set to `value`
// by a fill_constant appended to startup (an optimizer's or the loss
// scaling's state).
void add_state(Program& startup, Program& main, const std::string& name, DataType dtype,
               const std::vector<int64_t>& shape, float value);

// The first op in block order whose role has the Optimize bit, or end().
Block::OpHandle find_first_optimizer_op(Block& block, std::string_view pass);

}  // namespace ctp
