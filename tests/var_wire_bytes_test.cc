// Vars read from bytes that an owner keeps alive (load_program_file's mapped
// file) stay their VarDesc bytes (program_ir/wire_vars.h): find_var decodes
// the one asked for, find_var_entry and for_each_var decode none, vars()
// decodes them all in declaration order, and the writer writes a var never
// decoded as the bytes it came as. Such a program equals the one read
// without an owner, refuses what that one refuses, and may be read from
// several threads at once.
#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "program_ir/error.h"
#include "program_ir/proto_io.h"
#include "program_ir/var_packing.h"
#include "tests/pb_test_encoder.h"

namespace ctp {
namespace {

using testing_pb::Pb;

constexpr int kLodTensor = 7, kFp32 = 5;

Pb lod_tensor_type(std::initializer_list<uint64_t> dims) {
  Pb tensor;
  tensor.varint(1, kFp32);
  for (uint64_t d : dims) tensor.varint(2, d);
  Pb lod;
  lod.msg(1, tensor);
  Pb type;
  type.varint(1, kLodTensor).msg(3, lod);
  return type;
}

// A VarDesc in another field order than ctp's writer uses (persistable
// before the name, the type last), with is_parameter written although it
// is false: ctp would write it otherwise, so only a var written as its
// bytes comes back the same.
Pb odd_order_var(std::string_view name, bool persistable) {
  Pb var;
  var.varint(3, persistable ? 1 : 0).str(1, name).varint(5, 0);
  var.msg(2, lod_tensor_type({4, 8}));
  return var;
}

// A var whose is_distributed attr says so ({is_distributed, BOOLEAN, i: 1}).
Pb distributed_var(std::string_view name) {
  Pb attr;
  attr.str(1, "is_distributed").varint(2, 6).varint(3, 1);
  Pb var;
  var.str(1, name).msg(2, lod_tensor_type({2})).varint(5, 1).msg(7, attr);
  return var;
}

std::string program_of(std::initializer_list<Pb> vars) {
  return testing_pb::one_block_program(vars, {});
}

std::string three_vars() {
  return program_of({odd_order_var("w", true), odd_order_var("x", false), distributed_var("d")});
}

Program read_owned(const std::string& bytes) {
  auto owner = std::make_shared<const std::string>(bytes);
  return parse_program_proto(*owner, "owned.pb", ProtoReadOptions{.owner = owner});
}

std::vector<std::string> names_in_order(const Block& block) {
  std::vector<std::string> names;
  for (const Var& v : block.vars()) names.push_back(v.name);
  return names;
}

TEST(VarWireBytes, EntriesComeFromTheBytesAndTheReadEqualsTheCopyingRead) {
  const std::string bytes = three_vars();
  const Program owned = read_owned(bytes);
  const Block& block = owned.global_block();
  std::vector<std::string> walked;
  block.for_each_var([&](const Block::VarEntry& v) {
    EXPECT_EQ(v.var, nullptr) << v.name;  // nothing decoded
    EXPECT_FALSE(v.bytes.empty()) << v.name;
    walked.emplace_back(v.name);
  });
  EXPECT_EQ(walked, (std::vector<std::string>{"w", "x", "d"}));
  const std::optional<Block::VarEntry> w = block.find_var_entry("w");
  ASSERT_TRUE(w.has_value());
  EXPECT_TRUE(w->persistable);
  EXPECT_FALSE(w->is_parameter);
  EXPECT_FALSE(w->is_distributed);
  const std::optional<Block::VarEntry> d = block.find_var_entry("d");
  ASSERT_TRUE(d.has_value());
  EXPECT_TRUE(d->is_parameter);
  EXPECT_TRUE(d->is_distributed);
  EXPECT_FALSE(block.find_var_entry("nope").has_value());
  EXPECT_TRUE(block.has_var("x"));
  EXPECT_EQ(block.var_count(), 3u);
  // Asking for one var decodes that one alone.
  const Var& x = block.var("x");
  EXPECT_EQ(x.shape, (std::vector<int64_t>{4, 8}));
  EXPECT_TRUE(x.explicit_defaults.is_parameter);
  int decoded = 0;
  block.for_each_var([&](const Block::VarEntry& v) { decoded += v.var != nullptr; });
  EXPECT_EQ(decoded, 1);
  EXPECT_EQ(block.find_var_entry("x")->var, &x);
  // Comparing decodes the rest; the var decoded first keeps its address.
  EXPECT_EQ(owned, parse_program_proto(bytes, "copied.pb"));
  EXPECT_EQ(&block.vars().front() + 0, block.find_var("w"));
  EXPECT_EQ(block.find_var("x"), &x);
}

TEST(VarWireBytes, AVarNeverDecodedIsWrittenAsItsBytes) {
  const std::string bytes = three_vars();
  EXPECT_EQ(serialize_program_proto(read_owned(bytes)), bytes);
  // The copying read encodes every var afresh, in ctp's field order.
  EXPECT_NE(serialize_program_proto(parse_program_proto(bytes, "copied.pb")), bytes);
}

TEST(VarWireBytes, AnEditedVarIsWrittenEdited) {
  Program owned = read_owned(three_vars());
  owned.global_block().var("x").stop_gradient = true;
  owned.global_block().var("w").shape = {16};
  const Program back = parse_program_proto(serialize_program_proto(owned), "back.pb");
  EXPECT_TRUE(back.global_block().var("x").stop_gradient);
  EXPECT_EQ(back.global_block().var("w").shape, std::vector<int64_t>{16});
  EXPECT_EQ(back, owned);
}

TEST(VarWireBytes, RemovedAndAddedVarsKeepDeclarationOrder) {
  Program owned = read_owned(three_vars());
  Block& block = owned.global_block();
  const Var* w = block.find_var("w");
  EXPECT_TRUE(block.remove_var("x"));
  EXPECT_FALSE(block.remove_var("x"));
  EXPECT_FALSE(block.has_var("x"));
  EXPECT_EQ(block.var_count(), 2u);
  Var fresh;
  fresh.name = "x";
  fresh.shape = {3};
  block.add_var(fresh);
  fresh.name = "y";
  block.add_var(fresh);
  // A name still held as bytes is taken: emplace gives the declared var.
  fresh.name = "d";
  auto [existing, added] = block.emplace_var(fresh);
  EXPECT_FALSE(added);
  EXPECT_TRUE(existing.is_distributed);
  EXPECT_THROW(block.add_var(fresh), Error);
  EXPECT_EQ(block.var_count(), 4u);
  std::vector<std::string> walked;
  block.for_each_var([&](const Block::VarEntry& v) { walked.emplace_back(v.name); });
  EXPECT_EQ(walked, (std::vector<std::string>{"w", "d", "x", "y"}));
  EXPECT_EQ(names_in_order(block), walked);
  EXPECT_EQ(block.find_var("w"), w);
  EXPECT_EQ(block.var("x").shape, std::vector<int64_t>{3});
  const Program back = parse_program_proto(serialize_program_proto(owned), "back.pb");
  EXPECT_EQ(names_in_order(back.global_block()), walked);
}

Var new_var(std::string name, std::vector<int64_t> shape, bool persistable) {
  Var var;
  var.name = std::move(name);
  var.shape = std::move(shape);
  var.persistable = persistable;
  var.stop_gradient = true;
  return var;
}

// A rewrite's new vars (add_packed_var) join the vars held as bytes, in
// declaration order with vars added otherwise, and read and write back as
// the Vars they were made from.
TEST(VarWireBytes, PackedVarsAreHeldAsBytesInDeclarationOrder) {
  Program owned = read_owned(three_vars());
  Block& block = owned.global_block();
  const Var p = new_var("p", {2, 3}, true);
  const Var r = new_var("r", {-1, 8}, false);
  EXPECT_TRUE(add_packed_var(block, p));
  block.add_var(new_var("q", {1}, false));
  EXPECT_TRUE(add_packed_var(block, r));
  const std::optional<Block::VarEntry> entry = block.find_var_entry("p");
  ASSERT_TRUE(entry.has_value());
  EXPECT_EQ(entry->var, nullptr);  // still bytes
  EXPECT_TRUE(entry->persistable);
  EXPECT_NE(block.find_var_entry("q")->var, nullptr);
  // A declared name is not added again (whether it is still bytes or not).
  EXPECT_FALSE(add_packed_var(block, new_var("p", {9}, false)));
  EXPECT_FALSE(add_packed_var(block, new_var("w", {1}, false)));
  EXPECT_FALSE(add_packed_var(block, new_var("q", {1}, false)));
  EXPECT_THROW(block.add_var(new_var("r", {1}, false)), Error);
  EXPECT_EQ(block.var_count(), 6u);
  std::vector<std::string> walked;
  block.for_each_var([&](const Block::VarEntry& v) { walked.emplace_back(v.name); });
  EXPECT_EQ(walked, (std::vector<std::string>{"w", "x", "d", "p", "q", "r"}));
  const Program back = parse_program_proto(serialize_program_proto(owned), "back.pb");
  EXPECT_EQ(names_in_order(back.global_block()), walked);
  EXPECT_EQ(back.global_block().var("p"), p);
  EXPECT_EQ(back.global_block().var("r"), r);
  EXPECT_EQ(block.var("r"), r);  // decoded on asking
  EXPECT_NE(block.find_var_entry("r")->var, nullptr);
  EXPECT_EQ(names_in_order(block), walked);
}

// Room reserved for the vars a rewrite will add (Block::reserve_vars,
// WireVars::reserve, which rebuilds the index at once): the vars read, one
// of them removed first, and the added ones are all found, in order.
TEST(VarWireBytes, RoomReservedForAddedVarsKeepsEveryNameFound) {
  Program owned = read_owned(three_vars());
  Block& block = owned.global_block();
  ASSERT_TRUE(block.remove_var("x"));
  constexpr int kAdded = 5000;
  block.reserve_vars(block.var_count() + kAdded);
  std::vector<std::string> expected{"w", "d"};
  for (int i = 0; i < kAdded; ++i) {
    expected.push_back("piece_" + std::to_string(i));
    ASSERT_TRUE(add_packed_var(block, new_var(expected.back(), {i + 1}, false)));
  }
  EXPECT_FALSE(add_packed_var(block, new_var("w", {1}, false)));
  EXPECT_FALSE(block.has_var("x"));
  for (const std::string& name : expected) EXPECT_TRUE(block.has_var(name)) << name;
  EXPECT_EQ(block.var("piece_4321").shape, (std::vector<int64_t>{4322}));
  EXPECT_EQ(names_in_order(block), expected);
}

// copy_var reads a var held as bytes without keeping it decoded.
TEST(VarWireBytes, ACopiedVarStaysBytes) {
  const std::string bytes = three_vars();
  Program owned = read_owned(bytes);
  const Block& block = owned.global_block();
  const std::optional<Var> w = block.copy_var("w");
  ASSERT_TRUE(w.has_value());
  EXPECT_EQ(*w, parse_program_proto(bytes, "copied.pb").global_block().var("w"));
  EXPECT_EQ(block.find_var_entry("w")->var, nullptr);
  EXPECT_FALSE(block.copy_var("absent").has_value());
  // A decoded var is copied as it now is.
  owned.global_block().var("x").shape = {5};
  EXPECT_EQ(block.copy_var("x")->shape, std::vector<int64_t>{5});
}

TEST(VarWireBytes, APackedVarInABlockOfVarsIsAVar) {
  Program program = Program::with_global_block();
  EXPECT_TRUE(add_packed_var(program.global_block(), new_var("p", {4}, true)));
  EXPECT_NE(program.global_block().find_var_entry("p")->var, nullptr);
  EXPECT_FALSE(add_packed_var(program.global_block(), new_var("p", {5}, true)));
  EXPECT_EQ(program.global_block().var("p").shape, std::vector<int64_t>{4});
}

TEST(VarWireBytes, ACopyOfABlockOfBytesIsItsOwn) {
  const Program owned = read_owned(three_vars());
  Program copy = owned;
  copy.global_block().var("w").persistable = false;
  EXPECT_TRUE(owned.global_block().var("w").persistable);
  EXPECT_FALSE(copy.global_block().var("w").persistable);
  copy.global_block().var("w").persistable = true;
  EXPECT_EQ(copy, owned);
}

// The owned read refuses what the copying read refuses, with the same words.
TEST(VarWireBytes, BadVarsAreRefusedAsTheCopyingReadRefusesThem) {
  Pb no_type;
  no_type.str(1, "t");
  Pb bad_type;
  bad_type.str(1, "u").msg(2, Pb().varint(1, 999));
  const std::vector<std::string> bad = {
      program_of({odd_order_var("a", false), odd_order_var("a", true)}),  // declared twice
      program_of({odd_order_var("a", false), no_type}),
      program_of({bad_type, odd_order_var("a", false)})};
  for (const std::string& bytes : bad) {
    std::string copied, owned;
    try {
      parse_program_proto(bytes, "p.pb");
    } catch (const Error& e) {
      copied = e.what();
    }
    try {
      auto owner = std::make_shared<const std::string>(bytes);
      parse_program_proto(*owner, "p.pb", ProtoReadOptions{.owner = owner});
    } catch (const Error& e) {
      owned = e.what();
    }
    EXPECT_FALSE(copied.empty());
    EXPECT_EQ(owned, copied);
  }
}

// Several threads looking vars up at once (the executor's device threads
// share a program) decode each var once and all get the same Var; one of
// them asking for the whole list meanwhile changes none of that.
TEST(VarWireBytes, ConcurrentLookupsSeeOneDecodedVar) {
  std::vector<Pb> vars;
  for (int i = 0; i < 64; ++i) vars.push_back(odd_order_var("v" + std::to_string(i), i % 2));
  const std::string bytes = testing_pb::one_block_program(vars, {});
  for (int round = 0; round < 10; ++round) {
    const Program owned = read_owned(bytes);
    const Block& b = owned.global_block();
    std::vector<std::vector<const Var*>> seen(4, std::vector<const Var*>(64));
    std::vector<std::thread> threads;
    for (std::size_t t = 0; t < seen.size(); ++t)
      threads.emplace_back([&, t] {
        for (int i = 0; i < 64; ++i) {
          const int k = (i * 7 + static_cast<int>(t) * 13) % 64;
          EXPECT_TRUE(b.find_var_entry("v" + std::to_string(k)).has_value());
          seen[t][k] = b.find_var("v" + std::to_string(k));
          if (t == 3 && i == 32) EXPECT_EQ(b.vars().size(), 64u);
        }
      });
    for (std::thread& t : threads) t.join();
    for (int k = 0; k < 64; ++k) {
      std::set<const Var*> distinct;
      for (const auto& s : seen) distinct.insert(s[k]);
      EXPECT_EQ(distinct.size(), 1u) << k;
      EXPECT_EQ(*distinct.begin(), b.find_var("v" + std::to_string(k)));
    }
  }
}

}  // namespace
}  // namespace ctp
