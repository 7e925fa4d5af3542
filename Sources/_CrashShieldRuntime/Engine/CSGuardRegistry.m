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
extern CSGuard CSGuardKVO;            /* Guards/CSGuard_KVO.m            SPEC §2.6 */
extern CSGuard CSGuardNotifications; /* Guards/CSGuard_Notifications.m  SPEC §2.7 */
extern CSGuard CSGuardTimers;        /* Guards/CSGuard_Timers.m         SPEC §2.8 */
extern CSGuard CSGuardMainThread;    /* Guards/CSGuard_MainThread.m     SPEC §2.10 */
extern CSGuard CSGuardZombies;       /* Guards/CSGuard_Zombies.m        SPEC §2.9 */

CSGuard *const CSGuardRegistry[] = {
    &CSGuardContainers,
    &CSGuardStrings,
    &CSGuardSelectors,
    &CSGuardNSNull,
    &CSGuardKVC,
    &CSGuardKVO,
    &CSGuardNotifications,
    &CSGuardTimers,
    &CSGuardMainThread,
    &CSGuardZombies,
};

const size_t CSGuardRegistryCount = sizeof(CSGuardRegistry) / sizeof(CSGuardRegistry[0]);
