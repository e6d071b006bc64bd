
// The emulated launch (appended after the translation unit): every thread of the grid, in
// order, of entry point `entry`, on the packed arguments.
extern "C" void anvil_emulate(unsigned entry, unsigned grid, unsigned block, const void* args) {
  blockDim = anvil_dim3{block, 1, 1};
  gridDim = anvil_dim3{grid, 1, 1};
  for (unsigned b = 0; b < grid; ++b) {
    for (unsigned t = 0; t < block; ++t) {
      blockIdx = anvil_dim3{b, 0, 0};
      threadIdx = anvil_dim3{t, 0, 0};
      anvil_entries[entry](*static_cast<const anvil_args*>(args));
    }
  }
}
