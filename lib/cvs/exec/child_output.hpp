// A child process's two output pipes, the child, and the buffers their reads fill: what a run_all
// slot (process.cpp) and a node stream's process (node_stream.cpp) both hold.
#pragma once

#include <array>
#include <memory>   // before Boost.Process: its posix handles.hpp uses std::unique_ptr unincluded
#include <utility>  // before Boost 1.74 asio: its awaitable.hpp uses std::exchange unincluded

#include <boost/asio.hpp>
#include <boost/process.hpp>

namespace cvs {

struct ChildOutput {
  explicit ChildOutput(boost::asio::io_context& io) : out(io), err(io) {}
  boost::process::async_pipe out;
  boost::process::async_pipe err;
  std::unique_ptr<boost::process::child> child;
  std::array<char, 65536> obuf{};
  std::array<char, 65536> ebuf{};
};

}  // namespace cvs
