#include "cli/list_command.h"

#include <iomanip>

#include "properties/property.h"
#include "properties/target_registry.h"
#include "targets/mutants/catalog.h"

namespace ckptspec {

CLI::App* AddListCommand(CLI::App& app) {
  return app.add_subcommand("list", "List the properties and the targets `ckptspec run` knows");
}

int RunListCommand(std::ostream& out) {
  out << "properties:\n";
  for (const Property& p : AllProperties()) {
    out << "  " << std::left << std::setw(4) << p.id << " " << std::setw(36) << p.name;
    if (*p.bugs) out << " catches " << p.bugs;
    out << "\n";
  }
  out << "targets:\n";
  for (const TargetFactory& t : RegisteredTargets()) {
    if (!t.expect_killed) out << "  " << t.name << "  (expected clean)\n";
  }
  for (const MutantInfo& m : MutantCatalog()) {
    out << "  " << std::setw(10) << m.id << " " << std::setw(26) << m.name << " " << m.upstream
        << "; killers " << m.killers << "\n";
  }
  out << "  all        the reference and every mutant\n  all-mutants\n";
  return 0;
}

}  // namespace ckptspec
