// Errors raised by every stage. The CLI prints them and exits with code 2.
//
// Error: a problem with the user's input that has no source position (the interpreter's
// strictness errors, a refused gradient, ...). The message names the block/buffer.
// SourceError: a problem at a position of a script; what() is "FILE:LINE:COL: error: MSG".
#pragma once

#include <stdexcept>
#include <string>

namespace tirc {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& msg) : std::runtime_error(msg) {}
};

class SourceError : public Error {
 public:
  SourceError(std::string file, int line, int col, const std::string& msg)
      : Error(file + ":" + std::to_string(line) + ":" + std::to_string(col) + ": error: " + msg),
        file_(std::move(file)),
        line_(line),
        col_(col),
        msg_(msg) {}
  const std::string& file() const { return file_; }
  int line() const { return line_; }
  int col() const { return col_; }
  // The message without the position prefix.
  const std::string& message() const { return msg_; }

 private:
  std::string file_;
  int line_, col_;
  std::string msg_;
};

}  // namespace tirc
