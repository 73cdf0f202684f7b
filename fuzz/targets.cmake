# The fuzz targets and what each links, shared by the libFuzzer build
# (fuzz/CMakeLists.txt) and the corpus replay in the normal build
# (tests/fuzz/CMakeLists.txt). Target NAME is fuzz/NAME_fuzz.cpp; its seed
# corpus is tests/fuzz/corpus/NAME/, its dictionary fuzz/NAME.dict (optional).
set(CHESSRL_FUZZ_TARGETS fen move pgn checkpoint game config)
set(CHESSRL_FUZZ_DEPS_fen chessrl::chess)
set(CHESSRL_FUZZ_DEPS_move chessrl::chess)
set(CHESSRL_FUZZ_DEPS_pgn chessrl::chess)
set(CHESSRL_FUZZ_DEPS_checkpoint chessrl::nn)
set(CHESSRL_FUZZ_DEPS_game chessrl::replay)
set(CHESSRL_FUZZ_DEPS_config chessrl::config)
# Targets that need the service libraries (CHESSRL_SERVICES=ON).
set(CHESSRL_FUZZ_SERVICE_TARGETS game config)
