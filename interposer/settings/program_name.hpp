// The name a run is known by when MEMWATCH_WORKLOAD gives none: the program's own (argv[0]'s
// basename), or, for an interpreter, what it runs. `python3 train.py` is `train`,
// `python3 -m pytorch3dunet.train` is `pytorch3dunet.train`, `bash run.sh` is `run`; an
// interpreter given code on its command line (`python3 -c ...`) keeps its own name.
#pragma once

#include <string>

namespace memwatch::shim {

std::string program_name(int argc, char** argv);

}  // namespace memwatch::shim
