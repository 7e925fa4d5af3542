/*
 * GNUstepShim/objc/blocks_runtime.h — Linux only: scripts/bootstrap.sh copies it into a directory
 * that the pkg-config file crashshield-gnustep-base.pc puts on the include path.
 *
 * SwiftPM compiles C-family targets with -fblocks, and GNUstep's headers then include
 * <objc/blocks_runtime.h>, which GCC's libobjc does not ship. The usual fix, -fno-blocks, is an
 * unsafe flag that SwiftPM refuses from a dependency, so this header declares the two functions
 * GNUstep's headers use (libgnustep-base exports them). Contract: CrashShield's Objective-C
 * code writes no block literals (the global/stack block classes do not exist on this runtime).
 */
#ifndef CS_GNUSTEP_SHIM_BLOCKS_RUNTIME_H
#define CS_GNUSTEP_SHIM_BLOCKS_RUNTIME_H
void *_Block_copy(const void *block);
void _Block_release(const void *block);
#endif
