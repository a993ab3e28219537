// The machinery of core/choices.h's tables, with no dependency (the TensorBoard writer's
// library, which never sees LibTorch's headers, uses it too): a table's rows, and the name,
// parser, help and order check every table shares.
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "trainbench/core/errors.h"

namespace trainbench {

// The rows of enum E: ChoiceTable<E>::rows, a constexpr std::array of structs whose first three
// members are `value`, `name` and `help` (ChoiceRow<E>, or a row of its own that adds
// properties after them). Specialized below for each enum.
template <class E>
struct ChoiceTable;
template <class E>
struct ChoiceRow {
  E value;
  const char* name;
  const char* help;  // words for --help ("" for none)
};

// The row of a value (rows are in the enum's order, checked by choices_in_order).
template <class E>
constexpr const auto& row_of(E value) {
  return ChoiceTable<E>::rows[static_cast<size_t>(value)];
}
// The value's name as the flags and files spell it.
template <class E>
constexpr const char* name_of(E value) {
  return row_of(value).name;
}
// The value a name spells, or nullopt.
template <class E>
std::optional<E> parse_choice(std::string_view name) {
  for (const auto& r : ChoiceTable<E>::rows) {
    if (name == r.name) return r.value;
  }
  return std::nullopt;
}
// Every name, in the table's order (the flag table's choices).
template <class E>
std::vector<std::string> choice_names() {
  std::vector<std::string> out;
  for (const auto& r : ChoiceTable<E>::rows) out.emplace_back(r.name);
  return out;
}
// The one-line error of a text that is none of a flag's choices: "--dtype: 'fp8' is not
// allowed; use one of float32|float16|bfloat16". The flag check (core/flags.cpp) and choice_of
// both say it so.
inline ConfigError not_a_choice(const std::string& flag, const std::string& text,
                                const std::vector<std::string>& choices) {
  std::string names;
  for (const std::string& n : choices) names += (names.empty() ? "" : "|") + n;
  return ConfigError("--" + flag + ": '" + text + "' is not allowed; use one of " + names);
}
// A choice flag's value as its enum: throws not_a_choice when the text names no row.
template <class E>
E choice_of(const char* flag, const std::string& text) {
  if (const auto v = parse_choice<E>(text)) return *v;
  throw not_a_choice(flag, text, choice_names<E>());
}

// The flag help of a choice flag: head, then "name (help)" per row joined by " | " (a row
// without help words is its name alone), then tail.
template <class E>
std::string choice_help(const std::string& head, const std::string& tail) {
  std::string out = head;
  bool first = true;
  for (const auto& r : ChoiceTable<E>::rows) {
    out += std::string(first ? "" : " | ") + r.name;
    if (*r.help) out += std::string(" (") + r.help + ")";
    first = false;
  }
  return out + tail;
}
// True when a table has one row per value of E (E::kLast is its last value), each at its
// value's place.
template <class E>
constexpr bool choices_in_order() {
  const auto& rows = ChoiceTable<E>::rows;
  if (rows.size() != static_cast<size_t>(E::kLast) + 1) return false;
  for (size_t i = 0; i < rows.size(); ++i) {
    if (static_cast<size_t>(rows[i].value) != i) return false;
  }
  return true;
}

}  // namespace trainbench
