/*
 * CSGuardRegistry.m — every guard, in install order. Adding a guard: one file in Guards/ and
 * one row here. Nothing registers itself (no +load, no constructors, no section scanning).
 */
#import "CSEngine.h"

extern CSGuard CSGuardContainers; /* Guards/CSGuard_Containers.m */
extern CSGuard CSGuardStrings;    /* Guards/CSGuard_Strings.m */
extern CSGuard CSGuardSelectors;  /* Guards/CSGuard_Selectors.m */
extern CSGuard CSGuardNSNull;     /* Guards/CSGuard_NSNull.m */
extern CSGuard CSGuardKVC;        /* Guards/CSGuard_KVC.m */
extern CSGuard CSGuardKVO;            /* Guards/CSGuard_KVO.m */
extern CSGuard CSGuardNotifications; /* Guards/CSGuard_Notifications.m */
extern CSGuard CSGuardTimers;        /* Guards/CSGuard_Timers.m */
extern CSGuard CSGuardMainThread;    /* Guards/CSGuard_MainThread.m */
extern CSGuard CSGuardZombies;       /* Guards/CSGuard_Zombies.m */

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
