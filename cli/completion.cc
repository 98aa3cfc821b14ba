// The completion script (see completion.h): one walk of the parser's tree, one case per
// subcommand path, and one fixed function that reads the command line against them.
#include "cli/completion.h"

#include <algorithm>
#include <iostream>
#include <string>
#include <vector>

#include "base/command_failure.h"
#include "base/error.h"
#include "base/escape.h"
#include "proxy/cli.h"

namespace gdrproxy::cli {
namespace {

// What the script knows of one subcommand path.
struct Node {
  std::string path;  // "" for gdrproxy itself, else "netns move"
  std::vector<std::string> subs, flags, valued;
  std::vector<std::pair<std::string, std::vector<std::string>>> choices;  // valued option's
  std::vector<std::string> positionals;  // each: its choices joined by ',', or "-" (free)
  bool last_repeats = false;             // the last positional takes every further word
  bool runs_command = false;             // the words after "--" are a command line
};

// Names go into the script literally (case labels, compgen word lists): only these characters.
std::string literal(const std::string& s, const std::string& what) {
  const bool ok = !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '_' || c == '.' || c == '/' || c == ':' || c == '+' || c == '@';
  });
  if (!ok) throw Error("cannot write " + what + " " + gdrproxy::printable(s) + " into the script");
  return s;
}

// The fixed choices CLI11's IsMember puts in an option's type name ("TEXT:{on,off,auto}").
std::vector<std::string> choices_of(const CLI::Option& o) {
  const std::string t = o.get_type_name();
  const size_t open = t.find(":{"), close = t.find('}', open == std::string::npos ? 0 : open);
  if (open == std::string::npos || close == std::string::npos) return {};
  std::vector<std::string> out;
  const std::string list = t.substr(open + 2, close - open - 2);
  if (list.find("->") != std::string::npos) return {};  // a mapping, not a plain set
  size_t start = 0;
  while (start <= list.size()) {
    const size_t comma = std::min(list.find(',', start), list.size());
    if (comma > start) out.push_back(literal(list.substr(start, comma - start), "choice"));
    start = comma + 1;
  }
  return out;
}

bool visible(const CLI::App* a) {
  return !a->get_name().empty() && !a->get_group().empty();
}

// The options of `app` and of its nameless option groups.
void add_options(const CLI::App& app, Node& n) {
  for (const CLI::Option* o : app.get_options()) {
    if (o->get_group().empty()) continue;  // hidden
    if (!o->nonpositional()) {
      const auto c = choices_of(*o);
      std::string joined;
      for (const auto& w : c) joined += (joined.empty() ? "" : ",") + w;
      n.positionals.push_back(c.empty() ? "-" : joined);
      n.last_repeats = o->get_items_expected_max() > 1;
      continue;
    }
    std::vector<std::string> names;
    for (const auto& s : o->get_snames()) names.push_back("-" + literal(s, "option"));
    for (const auto& l : o->get_lnames()) names.push_back("--" + literal(l, "option"));
    const bool flag = o->get_items_expected_max() == 0;
    for (const auto& name : names) {
      (flag ? n.flags : n.valued).push_back(name);
      if (!flag)
        if (auto c = choices_of(*o); !c.empty()) n.choices.emplace_back(name, std::move(c));
    }
  }
  for (const CLI::App* g :
       app.get_subcommands([](const CLI::App* a) { return a->get_name().empty(); }))
    add_options(*g, n);
}

void walk(const CLI::App& app, const std::string& path, std::vector<Node>& out) {
  Node n;
  n.path = path;
  add_options(app, n);
  const auto& runs = proxy::kCommandSubcommands;
  n.runs_command = std::find(runs.begin(), runs.end(), path) != runs.end();
  std::vector<const CLI::App*> subs = app.get_subcommands(visible);
  for (const CLI::App* s : subs) n.subs.push_back(literal(s->get_name(), "subcommand"));
  out.push_back(std::move(n));
  for (const CLI::App* s : subs)
    walk(*s, path.empty() ? s->get_name() : path + " " + s->get_name(), out);
}

std::string words(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& w : v) s += (s.empty() ? "" : " ") + w;
  return s;
}

// The part of the script that is the same for every tree: it reads COMP_WORDS against the
// tables above it.
constexpr const char* kReader = R"(_gdrproxy() {
  local cur=${COMP_WORDS[COMP_CWORD]} prev='' path='' subs='' flags='' valued='' pos='' repeats=0 runs=0
  local i word npos=0 choices
  COMPREPLY=()
  _gdrproxy_node ""
  for ((i = 1; i < COMP_CWORD; i++)); do
    word=${COMP_WORDS[i]}
    if [[ $word == -- ]]; then
      # The rest is a command line (run) or the words of the runtime (runtime), not gdrproxy's.
      if ((runs && i == COMP_CWORD - 1)); then
        mapfile -t COMPREPLY < <(compgen -c -- "$cur")
      else
        compopt -o filenames 2>/dev/null
        mapfile -t COMPREPLY < <(compgen -f -- "$cur")
      fi
      return 0
    fi
    if [[ " $valued " == *" $word "* ]]; then
      ((i++))                                                # its value
      [[ ${COMP_WORDS[i]} == = ]] && ((i++))                 # --opt=value split at "="
    elif [[ $word != -* && $word != = && " $subs " == *" $word "* ]]; then
      path=${path:+$path }$word
      npos=0
      _gdrproxy_node "$path"
    elif [[ $word != -* && $word != = ]]; then
      ((npos++))
    fi
  done
  prev=${COMP_WORDS[COMP_CWORD-1]}
  [[ $prev == = ]] && ((COMP_CWORD >= 2)) && prev=${COMP_WORDS[COMP_CWORD-2]}
  [[ $cur == = ]] && cur=
  if ((COMP_CWORD > 1)) && [[ " $valued " == *" $prev "* ]]; then
    choices=$(_gdrproxy_choices "$path" "$prev")
    if [[ -n $choices ]]; then
      mapfile -t COMPREPLY < <(compgen -W "$choices" -- "$cur")
    else
      compopt -o filenames 2>/dev/null
      mapfile -t COMPREPLY < <(compgen -f -- "$cur")
    fi
    return 0
  fi
  if [[ $cur == -* ]]; then
    mapfile -t COMPREPLY < <(compgen -W "$flags $valued" -- "$cur")
    return 0
  fi
  mapfile -t COMPREPLY < <(compgen -W "$subs" -- "$cur")
  # The positional this word would be: its choices, or a file name.
  local -a kinds
  read -ra kinds <<<"$pos"
  ((npos >= ${#kinds[@]} && repeats && ${#kinds[@]} > 0)) && npos=$((${#kinds[@]} - 1))
  if ((npos < ${#kinds[@]})); then
    if [[ ${kinds[npos]} == - ]]; then
      compopt -o filenames 2>/dev/null
      mapfile -t -O ${#COMPREPLY[@]} COMPREPLY < <(compgen -f -- "$cur")
    else
      mapfile -t -O ${#COMPREPLY[@]} COMPREPLY < <(compgen -W "${kinds[npos]//,/ }" -- "$cur")
    fi
  fi
  return 0
}
complete -F _gdrproxy gdrproxy
)";

}  // namespace

void write_bash_completion(const CLI::App& root, std::ostream& out) {
  std::vector<Node> nodes;
  walk(root, "", nodes);
  out << "# bash completion for gdrproxy, written by `gdrproxy completion bash` from the "
         "command's own\n# subcommand tree: regenerate it from the binary, never edit it.\n"
         "# shellcheck shell=bash\n\n"
         "# _gdrproxy_node PATH: the subcommands, flags, options taking a value and positionals "
         "of PATH.\n_gdrproxy_node() {\n  case $1 in\n";
  for (const Node& n : nodes) {
    out << "    \"" << n.path << "\")\n      subs=\"" << words(n.subs) << "\"\n      flags=\""
        << words(n.flags) << "\"\n      valued=\"" << words(n.valued) << "\"\n      pos=\""
        << words(n.positionals) << "\" repeats=" << n.last_repeats << " runs=" << n.runs_command
        << " ;;\n";
  }
  out << "  esac\n}\n\n# _gdrproxy_choices PATH OPTION: the fixed values OPTION takes, if any.\n"
         "_gdrproxy_choices() {\n  case \"$1|$2\" in\n";
  for (const Node& n : nodes)
    for (const auto& [opt, c] : n.choices)
      out << "    \"" << n.path << "|" << opt << "\") echo \"" << words(c) << "\" ;;\n";
  out << "  esac\n}\n\n" << kReader;
}

void register_completion(CLI::App& app, int& exit_code) {
  auto* c = app.add_subcommand(
      "completion",
      "Print a shell completion script for gdrproxy, made from this binary's own subcommands,\n"
      "options and their fixed values (so it always matches the binary that prints it).\n"
      "The install step places it in share/bash-completion/completions/gdrproxy, where\n"
      "bash-completion finds it; to load it into the running shell instead:\n"
      "  source <(gdrproxy completion bash)\n"
      "Example: gdrproxy completion bash > /etc/bash_completion.d/gdrproxy");
  auto shell = std::make_shared<std::string>();
  c->add_option("shell", *shell, "The shell to write for (bash only)")
      ->required()
      ->check(CLI::IsMember({"bash"}));
  c->callback([shell, &app, &exit_code] {
    exit_code = run_guarded("gdrproxy completion", 1, [&] {
      if (*shell == "bash") write_bash_completion(app, std::cout);
      std::cout.flush();
      return std::cout ? 0 : 1;
    });
  });
}

}  // namespace gdrproxy::cli
