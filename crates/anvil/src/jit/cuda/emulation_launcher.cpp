// The emulated launch (appended after the translation unit): every thread of the grid of
// entry point `entry` on the packed arguments, warp by warp, each warp's lanes as coroutines
// (see emulation.hpp).
static unsigned anvil_emulated_entry;
static const void* anvil_emulated_args;
// Each lane's stack: enough for a thread's local arrays (at most a few KiB) and the calls.
static char anvil_lane_stacks[32][1 << 18];

static void anvil_run_lane() {
  anvil_entries[anvil_emulated_entry](*static_cast<const anvil_args*>(anvil_emulated_args));
  // The lane's end resumes the next one (its `uc_link`), which may start afresh.
  anvil_warp.current += 1;
  threadIdx.x = anvil_warp.base + anvil_warp.current;
}

extern "C" void anvil_emulate(unsigned entry, unsigned grid, unsigned block, const void* args) {
  blockDim = anvil_dim3{block, 1, 1};
  gridDim = anvil_dim3{grid, 1, 1};
  anvil_emulated_entry = entry;
  anvil_emulated_args = args;
  for (unsigned b = 0; b < grid; ++b) {
    for (unsigned base = 0; base < block; base += 32) {
      anvil_warp.count = block - base < 32 ? block - base : 32;
      for (unsigned lane = 0; lane < anvil_warp.count; ++lane) {
        ucontext_t& context = anvil_warp.lanes[lane];
        getcontext(&context);
        context.uc_stack.ss_sp = anvil_lane_stacks[lane];
        context.uc_stack.ss_size = sizeof anvil_lane_stacks[lane];
        context.uc_link = lane + 1 < anvil_warp.count ? &anvil_warp.lanes[lane + 1] : &anvil_warp.launcher;
        makecontext(&context, anvil_run_lane, 0);
      }
      blockIdx = anvil_dim3{b, 0, 0};
      anvil_warp.base = base;
      anvil_warp.current = 0;
      threadIdx = anvil_dim3{base, 0, 0};
      swapcontext(&anvil_warp.launcher, &anvil_warp.lanes[0]);
    }
  }
}
