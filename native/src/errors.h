#pragma once
// Typed errors that cross into JavaScript as Error objects with `code` and `details`.
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace neuron {

struct RuntimeError : std::runtime_error {
    std::string code;
    std::vector<std::pair<std::string, double>> numbers;
    std::vector<std::pair<std::string, std::string>> strings;
    std::vector<std::pair<std::string, std::vector<std::string>>> lists;

    RuntimeError(std::string code, const std::string & message) : std::runtime_error(message), code(std::move(code)) {}

    RuntimeError & num(const std::string & key, double value) {
        numbers.emplace_back(key, value);
        return *this;
    }
    RuntimeError & str(const std::string & key, const std::string & value) {
        strings.emplace_back(key, value);
        return *this;
    }
    RuntimeError & list(const std::string & key, const std::vector<std::string> & value) {
        lists.emplace_back(key, value);
        return *this;
    }
};

// "a, b, c", for the names an error message lists
inline std::string join_names(const std::vector<std::string> & names) {
    std::string s;
    for (const auto & n : names) s += (s.empty() ? "" : ", ") + n;
    return s;
}

}  // namespace neuron
