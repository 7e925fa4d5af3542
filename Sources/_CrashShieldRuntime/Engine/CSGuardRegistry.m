/*
 * CSGuardRegistry.m — every guard, in install order. Adding a guard: one file in Guards/ and
 * one row here. Nothing registers itself (no +load, no constructors, no section scanning).
 */
#import "CSEngine.h"

extern CSGuard CSGuardContainers; /* Guards/CSGuard_Containers.m  SPEC §2.1 */
extern CSGuard CSGuardStrings;    /* Guards/CSGuard_Strings.m     SPEC §2.2 */

CSGuard *const CSGuardRegistry[] = {
    &CSGuardContainers,
    &CSGuardStrings,
};

const size_t CSGuardRegistryCount = sizeof(CSGuardRegistry) / sizeof(CSGuardRegistry[0]);
