// Imported first by in-process benchmarks: the operator's logger writes to stdout, which carries the
// benchmark's machine-readable summary, so it only logs warnings and errors here.
process.env.OPERATOR_LOG_LEVEL ??= "warn";
