/*
 * CSGuardRegistry.m — every guard, in install order. Adding a guard: one file in Guards/ and
 * one row here. Nothing registers itself (no +load, no constructors, no section scanning).
 */
#import "CSEngine.h"

extern CSGuard CSGuardContainers; /* Guards/CSGuard_Containers.m  SPEC §2.1 */
extern CSGuard CSGuardStrings;    /* Guards/CSGuard_Strings.m     SPEC §2.2 */
extern CSGuard CSGuardSelectors;  /* Guards/CSGuard_Selectors.m   SPEC §2.3 */
extern CSGuard CSGuardNSNull;     /* Guards/CSGuard_NSNull.m      SPEC §2.4 */
extern CSGuard CSGuardKVC;        /* Guards/CSGuard_KVC.m         SPEC §2.5 */

CSGuard *const CSGuardRegistry[] = {
    &CSGuardContainers,
    &CSGuardStrings,
    &CSGuardSelectors,
    &CSGuardNSNull,
    &CSGuardKVC,
};

const size_t CSGuardRegistryCount = sizeof(CSGuardRegistry) / sizeof(CSGuardRegistry[0]);
