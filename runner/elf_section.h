// Reading one named section of an ELF file without loading it: how the plugin loader
// (runner/plugin.h) reads a plugin's compatibility stamp before any of its code runs.
#pragma once

#include <string>

#include "model/status.h"

namespace ckptspec {

// The contents of the section named `name` of the 64-bit little-endian ELF image `image`.
// Errors: InvalidArgument when the image is not such an ELF file or its section table or names
// lie outside it (naming what); NotFound when no section has that name. Reads only inside
// `image`.
Status ElfSectionContents(const std::string& image, const std::string& name, std::string* out);

}  // namespace ckptspec
