// load_program_file maps a regular file and reads anything else (a pipe);
// both give the program that parsing the file's bytes gives, and a file that
// cannot be read is refused naming it (program_ir/mapped_file.h).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "program_ir/atomic_file.h"
#include "program_ir/error.h"
#include "program_ir/mapped_file.h"
#include "program_ir/program_io.h"
#include "program_ir/proto_io.h"

namespace ctp {
namespace {

namespace fs = std::filesystem;

class MappedFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("ctp_mapped_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    const std::string golden =
        std::string(CTP_SOURCE_DIR) + "/tests/golden/grad_allreduce_adam_n2_r1_ring1_multihost/";
    program_ = load_program_file(golden + "main.json");
    bytes_ = serialize_program(program_, ProgramFormat::Proto);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string error_of(const std::string& path) {
    try {
      load_program_file(path);
    } catch (const Error& e) {
      return e.what();
    }
    return "no error";
  }

  fs::path dir_;
  Program program_;
  std::string bytes_;
};

TEST_F(MappedFileTest, ARegularFileIsMappedWhole) {
  const std::string path = (dir_ / "main.pb").string();
  write_file_atomically(path, bytes_);
  const MappedFile file(path);
  EXPECT_EQ(file.bytes(), bytes_);
  EXPECT_EQ(load_program_file(path), program_);
}

TEST_F(MappedFileTest, APipeIsRead) {
  const std::string path = (dir_ / "fifo").string();
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
  std::thread writer([&] { std::ofstream(path, std::ios::binary) << bytes_; });
  std::string error;
  Program read;
  try {
    read = load_program_file(path);
  } catch (const Error& e) {
    error = e.what();
  }
  writer.join();
  EXPECT_EQ(error, "");
  EXPECT_EQ(read, program_);
}

// Resident kB of the mapping that holds `address` (/proc/self/smaps), or
// -1 when no mapping does.
long resident_kb(const void* address) {
  std::ifstream smaps("/proc/self/smaps");
  const auto at = reinterpret_cast<uintptr_t>(address);
  std::string line;
  bool inside = false;
  while (std::getline(smaps, line)) {
    uintptr_t from = 0, to = 0;
    char dash = 0;
    std::istringstream range(line);
    if (range >> std::hex >> from >> dash >> to && dash == '-') {
      inside = from <= at && at < to;
    } else if (inside && line.rfind("Rss:", 0) == 0) {
      return std::stol(line.substr(4));
    }
  }
  return -1;
}

// release_before gives the pages before an offset back, in steps, and the
// bytes read the same afterwards (they are the file's again).
TEST_F(MappedFileTest, PagesBeforeAnOffsetGoBackAndReadTheSame) {
  std::string big(24 << 20, '\0');
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>(i * 7 + i / 4096);
  const std::string path = (dir_ / "big.bin").string();
  write_file_atomically(path, big);
  MappedFile file(path);
  const long whole = resident_kb(file.bytes().data());
  ASSERT_GE(whole, 23 * 1024);  // mapped whole and populated
  file.release_before(1000);     // less than a step: nothing goes back
  EXPECT_EQ(resident_kb(file.bytes().data()), whole);
  file.release_before(16 << 20);
  EXPECT_LE(resident_kb(file.bytes().data()), whole - 15 * 1024);
  EXPECT_EQ(file.bytes(), big);
}

// A protobuf read says how far it got, in order; the program is the same.
TEST_F(MappedFileTest, AProtobufReadSaysHowFarItGot) {
  std::vector<std::size_t> done;
  const Program read =
      parse_program_proto(bytes_, "main.pb", [&](std::size_t n) { done.push_back(n); });
  EXPECT_EQ(read, program_);
  ASSERT_GE(done.size(), program_.global_block().op_count());
  EXPECT_TRUE(std::is_sorted(done.begin(), done.end()));
  EXPECT_LE(done.back(), bytes_.size());
  EXPECT_GT(done.back(), bytes_.size() / 2);
}

TEST_F(MappedFileTest, WhatCannotBeReadIsRefusedNamingIt) {
  write_file_atomically((dir_ / "empty.pb").string(), "");
  EXPECT_NE(error_of((dir_ / "empty.pb").string()).find("empty input"), std::string::npos)
      << error_of((dir_ / "empty.pb").string());
  EXPECT_NE(error_of(dir_.string()).find(dir_.string() + ": is a directory"), std::string::npos)
      << error_of(dir_.string());
  EXPECT_NE(error_of((dir_ / "missing.pb").string()).find("missing.pb: cannot open"),
            std::string::npos)
      << error_of((dir_ / "missing.pb").string());
}

}  // namespace
}  // namespace ctp
