"""What drives runs, above the benchmarks: the run config (:mod:`.run_config`), running and re-scoring a run
(:mod:`.pipeline`), merging shards (:mod:`.shards`), sweeps and their file (:mod:`.sweep`, :mod:`.sweep_file`,
:mod:`.sweep_schema`) and the built-in benchmarks' run functions (:mod:`.api`). The command line sits beside it."""
