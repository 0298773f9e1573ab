#include "cli/list_command.h"

#include <iomanip>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "cli/input_file.h"
#include "runner/plugin.h"
#include "properties/property.h"
#include "runner/target_registry.h"
#include "targets/mutants/catalog.h"

namespace ckptspec {
namespace {

// {"B06", "B10"} -> "B06, B10"; none -> the dash.
std::string CommaList(const std::vector<std::string>& ids) {
  if (ids.empty()) return "—";
  std::string out;
  for (const std::string& id : ids) out += (out.empty() ? "" : ", ") + id;
  return out;
}

// "B06 B10" -> {"B06", "B10"}.
std::vector<std::string> Words(const std::string& text) {
  std::vector<std::string> words;
  std::istringstream in(text);
  for (std::string word; in >> word;) words.push_back(word);
  return words;
}

std::vector<std::string> KilledIds(const Property& p) {
  std::vector<std::string> ids;
  for (const MutantInfo* m : MutantsKilledBy(p.id)) ids.push_back(m->id);
  return ids;
}

// The properties meant to catch `bug` ("B04"): those whose Property::bugs name it.
std::vector<std::string> PropertiesMeantFor(const std::string& bug) {
  std::vector<std::string> ids;
  for (const Property& p : AllProperties()) {
    for (const std::string& b : Words(p.bugs)) {
      if (b == bug) ids.push_back(p.id);
    }
  }
  return ids;
}

void Begin(std::ostream& out, const char* name) {
  out << "<!-- begin generated: ckptspec list --markdown, " << name << " -->\n";
}

void End(std::ostream& out) { out << "<!-- end generated -->\n"; }

void PrintMarkdown(std::ostream& out) {
  Begin(out, "properties");
  out << "| id | invariant | meant to catch (docs/BUGS.md) | kills (catalog killers) | "
         "framework form |\n"
         "|---|---|---|---|---|\n";
  for (const Property& p : AllProperties()) {
    out << "| " << p.id << " | " << p.statement << " | " << CommaList(Words(p.bugs)) << " | "
        << CommaList(KilledIds(p)) << " | " << (p.check_framework ? "yes" : "—") << " |\n";
  }
  End(out);
  out << "\n";
  Begin(out, "mutants");
  out << "| id | name | deviation as implemented | upstream | meant for (docs/BUGS.md) | killers "
         "| framework killers |\n"
         "|---|---|---|---|---|---|---|\n";
  for (const MutantInfo& m : MutantCatalog()) {
    out << "| " << m.id << " | " << m.name << " | " << m.deviation << " | " << m.upstream << " | "
        << CommaList(PropertiesMeantFor(m.id)) << " | " << CommaList(KillerIds(m)) << " | "
        << CommaList(FrameworkKillerIds(m)) << " |\n";
  }
  End(out);
}

const char* ExpectationWord(PluginExpectation::Kind kind) {
  switch (kind) {
    case PluginExpectation::Kind::kKilled:
      return "killed";
    case PluginExpectation::Kind::kClean:
      return "clean";
    case PluginExpectation::Kind::kListed:
      return "listed";
  }
  return "?";
}

void PrintText(const std::vector<std::pair<std::string, PluginTarget>>& plugged,
               std::ostream& out) {
  out << "properties:\n";
  for (const Property& p : AllProperties()) {
    std::string facts;
    if (*p.bugs) facts = "catches " + CommaList(Words(p.bugs));
    const std::vector<std::string> killed = KilledIds(p);
    if (!killed.empty()) facts += (facts.empty() ? "kills " : "; kills ") + CommaList(killed);
    out << "  " << std::left << std::setw(4) << p.id << " ";
    if (facts.empty()) {
      out << p.name << "\n";
    } else {
      out << std::setw(34) << p.name << " " << facts << "\n";
    }
  }
  out << "targets:\n";
  for (const TargetFactory& t : RegisteredTargets()) {
    if (!t.expect_killed) out << "  " << t.name << "  (expected clean)\n";
  }
  for (const MutantInfo& m : MutantCatalog()) {
    out << "  " << std::setw(10) << m.id << " " << std::setw(26) << m.name << " " << m.upstream
        << "; killers " << m.killers << "\n";
  }
  for (const auto& [path, target] : plugged) {
    out << "  " << std::setw(10) << target.factory.name << " plugin " << path << ": "
        << ExpectationWord(target.expected) << "\n";
  }
  out << "  all        the reference and every mutant\n  all-mutants\n";
}

}  // namespace

CLI::App* AddListCommand(CLI::App& app, ListOptions* options) {
  CLI::App* list =
      app.add_subcommand("list", "List the properties and the targets `ckptspec run` knows");
  list->add_flag("--markdown", options->markdown,
                 "Print the property and mutant tables of docs/PROPERTIES.md and docs/MUTANTS.md");
  list->add_option("--plugin", options->plugins,
                   "a plugin whose targets to list too, with their expectations (repeatable; "
                   "docs/PLUGINS.md)");
  return list;
}

int RunListCommand(const ListOptions& options, std::ostream& out, std::ostream& err) {
  const auto usage_error = [&err](const Status& s) {
    err << "ckptspec list: " << s.message() << "\n";
    return 2;
  };
  if (options.markdown) {
    if (!options.plugins.empty()) {
      return usage_error(Status::InvalidArgument(
          "--markdown prints the catalogs' tables only; list a plugin's targets without it"));
    }
    PrintMarkdown(out);
    return 0;
  }
  std::vector<std::pair<std::string, PluginTarget>> plugged;
  for (const std::string& path : options.plugins) {
    std::vector<PluginTarget> targets;
    Status s = CheckRegularFile("--plugin", path);
    if (s.ok()) s = LoadTargetPlugin(path, &targets);
    if (!s.ok()) return usage_error(s);
    for (PluginTarget& t : targets) plugged.emplace_back(path, std::move(t));
  }
  PrintText(plugged, out);
  return 0;
}

}  // namespace ckptspec
