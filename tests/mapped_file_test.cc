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
