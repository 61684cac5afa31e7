// An empty library to preload in place of the shim: the sweep's own behaviour (rows, statuses,
// resume) is tested apart from what the shim measures.
extern "C" {
int memwatch_sweep_stub_preload = 1;
}
