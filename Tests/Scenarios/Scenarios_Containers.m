/*
 * Scenarios_Containers.m — container misuse scenarios, legal-input oracles, and the container
 * stress and randomized helpers the tests use.
 *
 * A scenario returns true only when the value it got back is the neutralised one: nil / 0 /
 * empty for reads beyond bounds, the valid part for range reads, the container unchanged for
 * no-op mutations, and a literal or initialiser result without the nil elements.
 * NSUserDefaults scenarios and oracles use keys prefixed "CrashShieldTest." and remove them.
 */
#import "CSScenarioSupport.h"
#include <pthread.h>
#include <string.h>

#define CS_ABC [NSArray arrayWithObjects:@"a", @"b", @"c", nil]
#define CS_AB [NSArray arrayWithObjects:@"a", @"b", nil]
#define CS_DEFAULTS_KEY @"CrashShieldTest.key"

/** A range built without NSMakeRange: GNUstep's NSMakeRange raises when location + length
 *  wraps, and the wrapping scenarios must reach the guarded method with such a range. */
static inline NSRange cs_raw_range(NSUInteger location, NSUInteger length) {
    NSRange range;
    range.location = location;
    range.length = length;
    return range;
}

static NSMutableArray *cs_mab(void) {
    return [NSMutableArray arrayWithObjects:@"a", @"b", nil];
}
static NSMutableOrderedSet *cs_moab(void) {
    return [NSMutableOrderedSet orderedSetWithObjects:@"a", @"b", nil];
}
static BOOL cs_moset_is_ab(NSMutableOrderedSet *set) {
    return [[set array] isEqual:CS_AB];
}

#pragma mark - Scenarios: NSArray

static bool array_objectAtIndex_beyond(void) {
    NSArray *array = [NSArray arrayWithObjects:@"a", @"b", nil];
    return [array objectAtIndex:cs_opaque_index(5)] == nil;
}
static bool array_objectAtIndexedSubscript_beyond(void) {
    return [CS_AB objectAtIndexedSubscript:cs_opaque_index(5)] == nil;
}
static bool array_subarrayWithRange_beyond(void) {
    NSArray *part = [CS_AB subarrayWithRange:NSMakeRange(1, cs_opaque_index(5))];
    return [part isEqual:[NSArray arrayWithObject:@"b"]];
}
static bool array_subarrayWithRange_wrap(void) {
    NSArray *part = [CS_AB subarrayWithRange:cs_raw_range(cs_opaque_index(NSUIntegerMax), 2)];
    return part != nil && [part count] == 0;
}
static bool array_objectsAtIndexes_beyond(void) {
    NSMutableIndexSet *indexes = [NSMutableIndexSet indexSetWithIndex:0];
    [indexes addIndex:cs_opaque_index(5)];
    return [[CS_AB objectsAtIndexes:indexes] isEqual:[NSArray arrayWithObject:@"a"]];
}
/* Neutralised, nothing is written: the original throws before it writes. */
static bool array_getObjects_beyond(void) {
    id sentinel = @"untouched";
    CS_UNRETAINED id buffer[4] = {sentinel, sentinel, sentinel, sentinel};
    [CS_AB getObjects:buffer range:NSMakeRange(1, cs_opaque_index(5))];
    return buffer[0] == sentinel && buffer[1] == sentinel && buffer[2] == sentinel && buffer[3] == sentinel;
}
/* GNUstep Base's NSData/general.m pattern for arrays: the caller's buffer holds 1 object, the
 * range asks for 5 of which 2 exist. Writing the valid part would write past the buffer
 * (into the fence here). */
static bool array_getObjects_shortBuffer(void) {
    id sentinel = @"untouched";
    CS_UNRETAINED id region[4] = {sentinel, sentinel, sentinel, sentinel}; /* buffer: region[0]; fence: the rest */
    [CS_AB getObjects:region range:NSMakeRange(0, cs_opaque_index(5))];
    return region[0] == sentinel && region[1] == sentinel && region[2] == sentinel && region[3] == sentinel;
}
static bool array_arrayWithObjects_nil(void) {
    CS_UNRETAINED id objects[3] = {@"x", cs_opaque(nil), @"z"};
    return [[NSArray arrayWithObjects:objects count:3] isEqual:[NSArray arrayWithObjects:@"x", @"z", nil]];
}
static bool array_literal_nil(void) {
    id missing = cs_opaque(nil);
    NSArray *literal = @[ @"x", missing, @"z" ];
    return [literal isEqual:[NSArray arrayWithObjects:@"x", @"z", nil]];
}
static bool array_initWithObjects_nil(void) {
    CS_UNRETAINED id objects[3] = {@"x", cs_opaque(nil), @"z"};
    NSArray *array = [[NSArray alloc] initWithObjects:objects count:3];
    BOOL ok = [array isEqual:[NSArray arrayWithObjects:@"x", @"z", nil]];
    CS_RELEASE(array);
    return ok;
}

#pragma mark - Scenarios: NSMutableArray

static bool marray_addObject_nil(void) {
    NSMutableArray *array = cs_mab();
    [array addObject:cs_opaque(nil)];
    return [array isEqual:CS_AB];
}
static bool marray_insertObject_nil(void) {
    NSMutableArray *array = cs_mab();
    [array insertObject:cs_opaque(nil) atIndex:0];
    return [array isEqual:CS_AB];
}
static bool marray_insertObject_beyond(void) {
    NSMutableArray *array = cs_mab();
    [array insertObject:@"c" atIndex:cs_opaque_index(9)];
    return [array isEqual:CS_AB];
}
static bool marray_removeObjectAtIndex_beyond(void) {
    NSMutableArray *array = cs_mab();
    [array removeObjectAtIndex:cs_opaque_index(9)];
    return [array isEqual:CS_AB];
}
static bool marray_replaceObjectAtIndex_beyond(void) {
    NSMutableArray *array = cs_mab();
    [array replaceObjectAtIndex:cs_opaque_index(9) withObject:@"c"];
    return [array isEqual:CS_AB];
}
static bool marray_replaceObjectAtIndex_nil(void) {
    NSMutableArray *array = cs_mab();
    [array replaceObjectAtIndex:0 withObject:cs_opaque(nil)];
    return [array isEqual:CS_AB];
}
static bool marray_exchangeObjectAtIndex_beyond(void) {
    NSMutableArray *array = cs_mab();
    [array exchangeObjectAtIndex:0 withObjectAtIndex:cs_opaque_index(5)];
    return [array isEqual:CS_AB];
}
static bool marray_setObjectAtIndexedSubscript_beyond(void) {
    NSMutableArray *array = cs_mab();
    [array setObject:@"c" atIndexedSubscript:cs_opaque_index(9)];
    return [array isEqual:CS_AB];
}
static bool marray_setObjectAtIndexedSubscript_nil(void) {
    NSMutableArray *array = cs_mab();
    [array setObject:cs_opaque(nil) atIndexedSubscript:0];
    return [array isEqual:CS_AB];
}
static bool marray_removeObjectsInRange_beyond(void) {
    NSMutableArray *array = cs_mab();
    [array removeObjectsInRange:NSMakeRange(1, cs_opaque_index(9))];
    return [array isEqual:CS_AB];
}
static bool marray_insertObjectsAtIndexes_mismatch(void) {
    NSMutableArray *array = cs_mab();
    [array insertObjects:[NSArray arrayWithObject:@"q"] atIndexes:[NSIndexSet indexSetWithIndexesInRange:NSMakeRange(0, 2)]];
    return [array isEqual:CS_AB];
}
static bool marray_insertObjectsAtIndexes_nilArray(void) {
    NSMutableArray *array = cs_mab();
    [array insertObjects:cs_opaque(nil) atIndexes:[NSIndexSet indexSetWithIndex:0]];
    return [array isEqual:CS_AB];
}
static bool marray_insertObjectsAtIndexes_nilIndexes(void) {
    NSMutableArray *array = cs_mab();
    [array insertObjects:[NSArray arrayWithObject:@"q"] atIndexes:cs_opaque(nil)];
    return [array isEqual:CS_AB];
}
static bool marray_insertObjectsAtIndexes_beyond(void) {
    NSMutableArray *array = cs_mab();
    [array insertObjects:[NSArray arrayWithObject:@"q"] atIndexes:[NSIndexSet indexSetWithIndex:cs_opaque_index(9)]];
    return [array isEqual:CS_AB];
}

#pragma mark - Scenarios: NSDictionary, NSMutableDictionary

static NSDictionary *cs_dict_a1(void) {
    return [NSDictionary dictionaryWithObject:@"1" forKey:@"a"];
}
static bool dict_dictionaryWithObjects_nilKey(void) {
    CS_UNRETAINED id objects[2] = {@"1", @"2"};
    CS_UNRETAINED id keys[2] = {@"a", cs_opaque(nil)};
    return [[NSDictionary dictionaryWithObjects:objects forKeys:keys count:2] isEqual:cs_dict_a1()];
}
static bool dict_dictionaryWithObjects_nilValue(void) {
    CS_UNRETAINED id objects[2] = {@"1", cs_opaque(nil)};
    CS_UNRETAINED id keys[2] = {@"a", @"b"};
    return [[NSDictionary dictionaryWithObjects:objects forKeys:keys count:2] isEqual:cs_dict_a1()];
}
static bool dict_literal_nilValue(void) {
    id missing = cs_opaque(nil);
    NSDictionary *literal = @{@"a" : @"1", @"b" : missing};
    return [literal isEqual:cs_dict_a1()];
}
static bool dict_initWithObjects_nilKey(void) {
    CS_UNRETAINED id objects[2] = {@"1", @"2"};
    CS_UNRETAINED id keys[2] = {@"a", cs_opaque(nil)};
    NSDictionary *dictionary = [[NSDictionary alloc] initWithObjects:objects forKeys:keys count:2];
    BOOL ok = [dictionary isEqual:cs_dict_a1()];
    CS_RELEASE(dictionary);
    return ok;
}
static NSMutableDictionary *cs_mdict_a1(void) {
    return [NSMutableDictionary dictionaryWithObject:@"1" forKey:@"a"];
}
static bool mdict_setObjectForKey_nilKey(void) {
    NSMutableDictionary *dictionary = cs_mdict_a1();
    [dictionary setObject:@"2" forKey:cs_opaque(nil)];
    return [dictionary isEqual:cs_dict_a1()];
}
static bool mdict_setObjectForKey_nilValue(void) {
    NSMutableDictionary *dictionary = cs_mdict_a1();
    [dictionary setObject:cs_opaque(nil) forKey:@"a"];
    return [dictionary isEqual:cs_dict_a1()];
}
static bool mdict_setObjectForKeyedSubscript_nilKey(void) {
    NSMutableDictionary *dictionary = cs_mdict_a1();
    [dictionary setObject:@"2" forKeyedSubscript:cs_opaque(nil)];
    return [dictionary isEqual:cs_dict_a1()];
}
static bool mdict_removeObjectForKey_nil(void) {
    NSMutableDictionary *dictionary = cs_mdict_a1();
    [dictionary removeObjectForKey:cs_opaque(nil)];
    return [dictionary isEqual:cs_dict_a1()];
}

#pragma mark - Scenarios: sets and ordered sets

static bool set_initWithObjects_nil(void) {
    CS_UNRETAINED id objects[3] = {@"x", cs_opaque(nil), @"z"};
    NSSet *set = [[NSSet alloc] initWithObjects:objects count:3];
    BOOL ok = [set isEqual:[NSSet setWithObjects:@"x", @"z", nil]];
    CS_RELEASE(set);
    return ok;
}
static bool mset_addObject_nil(void) {
    NSMutableSet *set = [NSMutableSet setWithObject:@"a"];
    [set addObject:cs_opaque(nil)];
    return [set isEqual:[NSSet setWithObject:@"a"]];
}
static bool mset_removeObject_nil(void) {
    NSMutableSet *set = [NSMutableSet setWithObject:@"a"];
    [set removeObject:cs_opaque(nil)];
    return [set isEqual:[NSSet setWithObject:@"a"]];
}
static bool oset_objectAtIndex_beyond(void) {
    NSOrderedSet *set = [NSOrderedSet orderedSetWithObjects:@"a", @"b", nil];
    return [set objectAtIndex:cs_opaque_index(5)] == nil;
}
static bool oset_objectAtIndexedSubscript_beyond(void) {
    NSOrderedSet *set = [NSOrderedSet orderedSetWithObjects:@"a", @"b", nil];
    return [set objectAtIndexedSubscript:cs_opaque_index(5)] == nil;
}
static bool oset_initWithObjects_nil(void) {
    CS_UNRETAINED id objects[3] = {@"x", cs_opaque(nil), @"z"};
    NSOrderedSet *set = [[NSOrderedSet alloc] initWithObjects:objects count:3];
    BOOL ok = [[set array] isEqual:[NSArray arrayWithObjects:@"x", @"z", nil]];
    CS_RELEASE(set);
    return ok;
}
static bool moset_addObject_nil(void) {
    NSMutableOrderedSet *set = cs_moab();
    [set addObject:cs_opaque(nil)];
    return cs_moset_is_ab(set);
}
static bool moset_removeObject_nil(void) {
    NSMutableOrderedSet *set = cs_moab();
    [set removeObject:cs_opaque(nil)];
    return cs_moset_is_ab(set);
}
static bool moset_insertObject_nil(void) {
    NSMutableOrderedSet *set = cs_moab();
    [set insertObject:cs_opaque(nil) atIndex:0];
    return cs_moset_is_ab(set);
}
#if defined(__APPLE__)
static bool moset_insertObject_beyond(void) {
    NSMutableOrderedSet *set = cs_moab();
    [set insertObject:@"c" atIndex:cs_opaque_index(9)];
    return cs_moset_is_ab(set);
}
#endif
static bool moset_removeObjectAtIndex_beyond(void) {
    NSMutableOrderedSet *set = cs_moab();
    [set removeObjectAtIndex:cs_opaque_index(9)];
    return cs_moset_is_ab(set);
}
static bool moset_replaceObjectAtIndex_beyond(void) {
    NSMutableOrderedSet *set = cs_moab();
    [set replaceObjectAtIndex:cs_opaque_index(9) withObject:@"c"];
    return cs_moset_is_ab(set);
}
static bool moset_replaceObjectAtIndex_nil(void) {
    NSMutableOrderedSet *set = cs_moab();
    [set replaceObjectAtIndex:0 withObject:cs_opaque(nil)];
    return cs_moset_is_ab(set);
}

static bool moset_setObjectAtIndex_beyond(void) {
    NSMutableOrderedSet *set = cs_moab();
    [set setObject:@"c" atIndex:cs_opaque_index(9)];
    return cs_moset_is_ab(set);
}
static bool moset_setObjectAtIndex_nil(void) {
    NSMutableOrderedSet *set = cs_moab();
    [set setObject:cs_opaque(nil) atIndex:0];
    return cs_moset_is_ab(set);
}
static bool moset_setObjectAtIndexedSubscript_beyond(void) {
    NSMutableOrderedSet *set = cs_moab();
    [set setObject:@"c" atIndexedSubscript:cs_opaque_index(9)];
    return cs_moset_is_ab(set);
}
static bool moset_exchangeObjectAtIndex_beyond(void) {
    NSMutableOrderedSet *set = cs_moab();
    [set exchangeObjectAtIndex:0 withObjectAtIndex:cs_opaque_index(9)];
    return cs_moset_is_ab(set);
}
#if defined(__APPLE__)
static bool moset_removeObjectsInRange_beyond(void) {
    NSMutableOrderedSet *set = cs_moab();
    [set removeObjectsInRange:NSMakeRange(1, cs_opaque_index(9))];
    return cs_moset_is_ab(set);
}
#endif
#if defined(__APPLE__)
static bool moset_insertObjectsAtIndexes_beyond(void) {
    NSMutableOrderedSet *set = cs_moab();
    [set insertObjects:[NSArray arrayWithObject:@"q"] atIndexes:[NSIndexSet indexSetWithIndex:cs_opaque_index(9)]];
    return cs_moset_is_ab(set);
}
#endif
#if defined(__APPLE__)
static bool moset_insertObjectsAtIndexes_mismatch(void) {
    NSMutableOrderedSet *set = cs_moab();
    [set insertObjects:[NSArray arrayWithObject:@"q"] atIndexes:[NSIndexSet indexSetWithIndexesInRange:NSMakeRange(0, 2)]];
    return cs_moset_is_ab(set);
}
#endif

#pragma mark - Scenarios: NSCache, NSUserDefaults

static NSCache *cs_cache_k1(void) {
    NSCache *cache = CS_AUTORELEASE([[NSCache alloc] init]);
    [cache setObject:@"1" forKey:@"k"];
    return cache;
}
static bool cache_setObjectForKey_nilKey(void) {
    NSCache *cache = cs_cache_k1();
    [cache setObject:@"2" forKey:cs_opaque(nil)];
    return [[cache objectForKey:@"k"] isEqual:@"1"];
}
static bool cache_setObjectForKey_nilValue(void) {
    NSCache *cache = cs_cache_k1();
    [cache setObject:cs_opaque(nil) forKey:@"k"];
    return [[cache objectForKey:@"k"] isEqual:@"1"];
}
static bool cache_setObjectForKeyCost_nilKey(void) {
    NSCache *cache = cs_cache_k1();
    [cache setObject:@"2" forKey:cs_opaque(nil) cost:1];
    return [[cache objectForKey:@"k"] isEqual:@"1"];
}
static bool cache_setObjectForKeyCost_nilValue(void) {
    NSCache *cache = cs_cache_k1();
    [cache setObject:cs_opaque(nil) forKey:@"k" cost:1];
    return [[cache objectForKey:@"k"] isEqual:@"1"];
}
static bool defaults_setObjectForKey_nilKey(void) {
    NSUserDefaults *defaults = [NSUserDefaults standardUserDefaults];
    [defaults setObject:@"1" forKey:cs_opaque(nil)];
    return [defaults objectForKey:CS_DEFAULTS_KEY] == nil;
}
static bool defaults_objectForKey_nilKey(void) {
    return [[NSUserDefaults standardUserDefaults] objectForKey:cs_opaque(nil)] == nil;
}
static bool defaults_removeObjectForKey_nilKey(void) {
    NSUserDefaults *defaults = [NSUserDefaults standardUserDefaults];
    [defaults setObject:@"kept" forKey:CS_DEFAULTS_KEY];
    [defaults removeObjectForKey:cs_opaque(nil)];
    BOOL ok = [[defaults objectForKey:CS_DEFAULTS_KEY] isEqual:@"kept"];
    [defaults removeObjectForKey:CS_DEFAULTS_KEY];
    return ok;
}

#pragma mark - Scenarios: NSData, NSMutableData

static NSData *cs_data_abc(void) {
    return [NSData dataWithBytes:"abc" length:3];
}
static bool data_subdataWithRange_beyond(void) {
    NSData *part = [cs_data_abc() subdataWithRange:NSMakeRange(1, cs_opaque_index(9))];
    return [part isEqual:[NSData dataWithBytes:"bc" length:2]];
}
static bool data_subdataWithRange_wrap(void) {
    NSData *part = [cs_data_abc() subdataWithRange:cs_raw_range(cs_opaque_index(NSUIntegerMax), 2)];
    return part != nil && [part length] == 0;
}
/* Neutralised, nothing is written: the original throws before it copies. */
static bool data_getBytesRange_beyond(void) {
    char buffer[8];
    memset(buffer, '-', sizeof buffer);
    [cs_data_abc() getBytes:buffer range:NSMakeRange(1, cs_opaque_index(9))];
    return memcmp(buffer, "--------", 8) == 0;
}
static bool data_getBytesRange_wrap(void) {
    char buffer[8];
    memset(buffer, '-', sizeof buffer);
    [cs_data_abc() getBytes:buffer range:cs_raw_range(2, cs_opaque_index(NSUIntegerMax))];
    return memcmp(buffer, "--------", 8) == 0;
}
/* GNUstep Base's NSData/general.m: a 4-byte buffer, a request for 20 bytes of 16-byte data.
 * Copying the valid part (15 bytes) would write 11 bytes past the buffer, into the fence here
 * (in general.m, into the heap after the buffer: a cached autorelease pool). */
static bool data_getBytesRange_shortBuffer(void) {
    char region[32]; /* buffer: the first 4 bytes; fence: the rest */
    memset(region, '-', sizeof region);
    NSData *data = [NSData dataWithBytes:"0123456789abcdef" length:16];
    [data getBytes:region range:NSMakeRange(1, cs_opaque_index(20))];
    for (size_t i = 0; i < sizeof region; i++)
        if (region[i] != '-') return false;
    return true;
}
static bool mdata_replaceBytesInRange_beyond(void) {
    NSMutableData *data = [NSMutableData dataWithBytes:"abc" length:3];
    [data replaceBytesInRange:NSMakeRange(cs_opaque_index(4), 1) withBytes:"x"];
    return [data isEqual:cs_data_abc()];
}
static bool mdata_replaceBytesInRange_wrap(void) {
    NSMutableData *data = [NSMutableData dataWithBytes:"abc" length:3];
    [data replaceBytesInRange:cs_raw_range(1, cs_opaque_index(NSUIntegerMax)) withBytes:"x"];
    return [data isEqual:cs_data_abc()];
}
static bool mdata_resetBytesInRange_beyond(void) {
    NSMutableData *data = [NSMutableData dataWithBytes:"abc" length:3];
    [data resetBytesInRange:NSMakeRange(cs_opaque_index(4), 1)];
    return [data isEqual:cs_data_abc()];
}

/* Misuses found by the selector survey (scripts/survey-cluster-selectors.m). */
static bool marray_removeLastObject_empty(void) {
    NSMutableArray *array = [NSMutableArray array];
    [array removeLastObject];
    return [array count] == 0;
}
static bool marray_replaceObjectsInRange_beyond(void) {
    NSMutableArray *array = cs_mab();
    [array replaceObjectsInRange:NSMakeRange(1, cs_opaque_index(5)) withObjectsFromArray:[NSArray arrayWithObject:@"x"]];
    return [array isEqual:CS_AB];
}
static bool marray_replaceObjectsInRangeRange_sourceBeyond(void) {
    NSMutableArray *array = cs_mab();
    [array replaceObjectsInRange:NSMakeRange(0, 1) withObjectsFromArray:[NSArray arrayWithObject:@"x"]
                           range:NSMakeRange(1, cs_opaque_index(5))];
    return [array isEqual:CS_AB];
}
static bool array_arrayByAddingObject_nil(void) {
    return [[CS_AB arrayByAddingObject:cs_opaque(nil)] isEqual:CS_AB];
}
static bool mdata_replaceBytesInRangeLength_beyond(void) {
    NSMutableData *data = [NSMutableData dataWithBytes:"abc" length:3];
    [data replaceBytesInRange:NSMakeRange(cs_opaque_index(5), 0) withBytes:"x" length:1];
    return [data isEqual:cs_data_abc()];
}

#define S(name, selector, cls, fn) {name, "container", selector, cls, fn}
static const cs_scenario kScenarios[] = {
    S("array.objectAtIndex.beyond", "objectAtIndex:", false, array_objectAtIndex_beyond),
    S("array.objectAtIndexedSubscript.beyond", "objectAtIndexedSubscript:", false, array_objectAtIndexedSubscript_beyond),
    S("array.subarrayWithRange.beyond", "subarrayWithRange:", false, array_subarrayWithRange_beyond),
    S("array.subarrayWithRange.wrap", "subarrayWithRange:", false, array_subarrayWithRange_wrap),
    S("array.objectsAtIndexes.beyond", "objectsAtIndexes:", false, array_objectsAtIndexes_beyond),
    S("array.getObjectsRange.beyond", "getObjects:range:", false, array_getObjects_beyond),
    S("array.getObjectsRange.shortBuffer", "getObjects:range:", false, array_getObjects_shortBuffer),
    S("array.arrayWithObjectsCount.nil", "arrayWithObjects:count:", true, array_arrayWithObjects_nil),
    S("array.literal.nil", "arrayWithObjects:count:", true, array_literal_nil),
    S("array.initWithObjectsCount.nil", "initWithObjects:count:", false, array_initWithObjects_nil),
    S("marray.addObject.nil", "addObject:", false, marray_addObject_nil),
    S("marray.insertObject.nil", "insertObject:atIndex:", false, marray_insertObject_nil),
    S("marray.insertObject.beyond", "insertObject:atIndex:", false, marray_insertObject_beyond),
    S("marray.removeObjectAtIndex.beyond", "removeObjectAtIndex:", false, marray_removeObjectAtIndex_beyond),
    S("marray.replaceObjectAtIndex.beyond", "replaceObjectAtIndex:withObject:", false, marray_replaceObjectAtIndex_beyond),
    S("marray.replaceObjectAtIndex.nil", "replaceObjectAtIndex:withObject:", false, marray_replaceObjectAtIndex_nil),
    S("marray.exchangeObjectAtIndex.beyond", "exchangeObjectAtIndex:withObjectAtIndex:", false,
      marray_exchangeObjectAtIndex_beyond),
    S("marray.setObjectAtIndexedSubscript.beyond", "setObject:atIndexedSubscript:", false,
      marray_setObjectAtIndexedSubscript_beyond),
    S("marray.setObjectAtIndexedSubscript.nil", "setObject:atIndexedSubscript:", false,
      marray_setObjectAtIndexedSubscript_nil),
    S("marray.removeObjectsInRange.beyond", "removeObjectsInRange:", false, marray_removeObjectsInRange_beyond),
    S("marray.insertObjectsAtIndexes.mismatch", "insertObjects:atIndexes:", false, marray_insertObjectsAtIndexes_mismatch),
    S("marray.insertObjectsAtIndexes.nilArray", "insertObjects:atIndexes:", false, marray_insertObjectsAtIndexes_nilArray),
    S("marray.insertObjectsAtIndexes.nilIndexes", "insertObjects:atIndexes:", false,
      marray_insertObjectsAtIndexes_nilIndexes),
    S("marray.insertObjectsAtIndexes.beyond", "insertObjects:atIndexes:", false, marray_insertObjectsAtIndexes_beyond),
    S("dict.dictionaryWithObjectsForKeysCount.nilKey", "dictionaryWithObjects:forKeys:count:", true,
      dict_dictionaryWithObjects_nilKey),
    S("dict.dictionaryWithObjectsForKeysCount.nilValue", "dictionaryWithObjects:forKeys:count:", true,
      dict_dictionaryWithObjects_nilValue),
    S("dict.literal.nilValue", "dictionaryWithObjects:forKeys:count:", true, dict_literal_nilValue),
    S("dict.initWithObjectsForKeysCount.nilKey", "initWithObjects:forKeys:count:", false, dict_initWithObjects_nilKey),
    S("mdict.setObjectForKey.nilKey", "setObject:forKey:", false, mdict_setObjectForKey_nilKey),
    S("mdict.setObjectForKey.nilValue", "setObject:forKey:", false, mdict_setObjectForKey_nilValue),
    S("mdict.setObjectForKeyedSubscript.nilKey", "setObject:forKeyedSubscript:", false,
      mdict_setObjectForKeyedSubscript_nilKey),
    S("mdict.removeObjectForKey.nil", "removeObjectForKey:", false, mdict_removeObjectForKey_nil),
    S("set.initWithObjectsCount.nil", "initWithObjects:count:", false, set_initWithObjects_nil),
    S("mset.addObject.nil", "addObject:", false, mset_addObject_nil),
    S("mset.removeObject.nil", "removeObject:", false, mset_removeObject_nil),
    S("oset.objectAtIndex.beyond", "objectAtIndex:", false, oset_objectAtIndex_beyond),
    S("oset.objectAtIndexedSubscript.beyond", "objectAtIndexedSubscript:", false, oset_objectAtIndexedSubscript_beyond),
    S("oset.initWithObjectsCount.nil", "initWithObjects:count:", false, oset_initWithObjects_nil),
    S("moset.addObject.nil", "addObject:", false, moset_addObject_nil),
    S("moset.removeObject.nil", "removeObject:", false, moset_removeObject_nil),
    S("moset.insertObject.nil", "insertObject:atIndex:", false, moset_insertObject_nil),
#if defined(__APPLE__) /* legal on GNUstep: see the container guard */
    S("moset.insertObject.beyond", "insertObject:atIndex:", false, moset_insertObject_beyond),
#endif
    S("moset.removeObjectAtIndex.beyond", "removeObjectAtIndex:", false, moset_removeObjectAtIndex_beyond),
    S("moset.replaceObjectAtIndex.beyond", "replaceObjectAtIndex:withObject:", false, moset_replaceObjectAtIndex_beyond),
    S("moset.replaceObjectAtIndex.nil", "replaceObjectAtIndex:withObject:", false, moset_replaceObjectAtIndex_nil),
    S("moset.setObjectAtIndex.beyond", "setObject:atIndex:", false, moset_setObjectAtIndex_beyond),
    S("moset.setObjectAtIndex.nil", "setObject:atIndex:", false, moset_setObjectAtIndex_nil),
    S("moset.setObjectAtIndexedSubscript.beyond", "setObject:atIndexedSubscript:", false,
      moset_setObjectAtIndexedSubscript_beyond),
    S("moset.exchangeObjectAtIndex.beyond", "exchangeObjectAtIndex:withObjectAtIndex:", false,
      moset_exchangeObjectAtIndex_beyond),
#if defined(__APPLE__) /* legal on GNUstep: see the container guard */
    S("moset.removeObjectsInRange.beyond", "removeObjectsInRange:", false, moset_removeObjectsInRange_beyond),
#endif
#if defined(__APPLE__) /* legal on GNUstep: see the container guard */
    S("moset.insertObjectsAtIndexes.beyond", "insertObjects:atIndexes:", false, moset_insertObjectsAtIndexes_beyond),
#endif
#if defined(__APPLE__) /* legal on GNUstep: see the container guard */
    S("moset.insertObjectsAtIndexes.mismatch", "insertObjects:atIndexes:", false, moset_insertObjectsAtIndexes_mismatch),
#endif
    S("cache.setObjectForKey.nilKey", "setObject:forKey:", false, cache_setObjectForKey_nilKey),
    S("cache.setObjectForKey.nilValue", "setObject:forKey:", false, cache_setObjectForKey_nilValue),
    S("cache.setObjectForKeyCost.nilKey", "setObject:forKey:cost:", false, cache_setObjectForKeyCost_nilKey),
    S("cache.setObjectForKeyCost.nilValue", "setObject:forKey:cost:", false, cache_setObjectForKeyCost_nilValue),
    S("defaults.setObjectForKey.nilKey", "setObject:forKey:", false, defaults_setObjectForKey_nilKey),
    S("defaults.objectForKey.nilKey", "objectForKey:", false, defaults_objectForKey_nilKey),
    S("defaults.removeObjectForKey.nilKey", "removeObjectForKey:", false, defaults_removeObjectForKey_nilKey),
    S("data.subdataWithRange.beyond", "subdataWithRange:", false, data_subdataWithRange_beyond),
    S("data.subdataWithRange.wrap", "subdataWithRange:", false, data_subdataWithRange_wrap),
    S("data.getBytesRange.beyond", "getBytes:range:", false, data_getBytesRange_beyond),
    S("data.getBytesRange.wrap", "getBytes:range:", false, data_getBytesRange_wrap),
    S("data.getBytesRange.shortBuffer", "getBytes:range:", false, data_getBytesRange_shortBuffer),
    S("mdata.replaceBytesInRange.beyond", "replaceBytesInRange:withBytes:", false, mdata_replaceBytesInRange_beyond),
    S("mdata.replaceBytesInRange.wrap", "replaceBytesInRange:withBytes:", false, mdata_replaceBytesInRange_wrap),
    S("mdata.resetBytesInRange.beyond", "resetBytesInRange:", false, mdata_resetBytesInRange_beyond),
    S("marray.removeLastObject.empty", "removeLastObject", false, marray_removeLastObject_empty),
    S("marray.replaceObjectsInRange.beyond", "replaceObjectsInRange:withObjectsFromArray:", false,
      marray_replaceObjectsInRange_beyond),
    S("marray.replaceObjectsInRangeRange.sourceBeyond", "replaceObjectsInRange:withObjectsFromArray:range:", false,
      marray_replaceObjectsInRangeRange_sourceBeyond),
    S("array.arrayByAddingObject.nil", "arrayByAddingObject:", false, array_arrayByAddingObject_nil),
    S("mdata.replaceBytesInRangeLength.beyond", "replaceBytesInRange:withBytes:length:", false,
      mdata_replaceBytesInRangeLength_beyond),
};
#undef S
const cs_scenario_table cs_container_scenarios = CS_TABLE(kScenarios);

#pragma mark - Oracles

/** Describes a collection element by element, in a stable order, without addresses. */
static NSString *cs_list(id collection) {
    if (collection == nil) return @"nil";
    NSArray *items = [collection isKindOfClass:[NSArray class]] ? collection
                   : [collection isKindOfClass:[NSOrderedSet class]]
                       ? [(NSOrderedSet *)collection array]
                       : [[(NSSet *)collection allObjects] sortedArrayUsingSelector:@selector(compare:)];
    return [NSString stringWithFormat:@"(%@)", [items componentsJoinedByString:@","]];
}
static NSString *cs_pairs(NSDictionary *dictionary) {
    if (dictionary == nil) return @"nil";
    NSMutableString *out = [NSMutableString stringWithString:@"{"];
    for (id key in [[dictionary allKeys] sortedArrayUsingSelector:@selector(compare:)])
        [out appendFormat:@"%@=%@;", key, [dictionary objectForKey:key]];
    [out appendString:@"}"];
    return out;
}
static NSString *cs_bytes(NSData *data) {
    if (data == nil) return @"nil";
    NSMutableString *out = [NSMutableString stringWithFormat:@"%lu:", (unsigned long)[data length]];
    const unsigned char *bytes = [data bytes];
    for (NSUInteger i = 0; i < [data length]; i++) [out appendFormat:@"%02x", bytes[i]];
    return out;
}
static NSArray *cs_numbers(NSUInteger count) {
    NSMutableArray *numbers = [NSMutableArray arrayWithCapacity:count];
    for (NSUInteger i = 0; i < count; i++) [numbers addObject:[NSNumber numberWithUnsignedInteger:i]];
    return numbers;
}

static void *oracle_array_objectAtIndex(void) {
    NSMutableString *out = [NSMutableString string];
    NSArray *literal = [NSArray arrayWithObjects:@"a", @"b", @"c", nil];
    NSMutableArray *mutable = [NSMutableArray arrayWithArray:literal];
    for (NSUInteger i = 0; i < 3; i++) {
        [out appendFormat:@"%@ ", cs_describe([literal objectAtIndex:i])];
        [out appendFormat:@"%@ ", cs_describe([mutable objectAtIndex:i])];
    }
    NSArray *large = cs_numbers(1000);
    [out appendFormat:@"%@ %@", [large objectAtIndex:999], [@[ @"x" ] objectAtIndex:0]];
    return cs_autoreleased_pointer(out);
}
static void *oracle_array_objectAtIndexedSubscript(void) {
    NSArray *array = CS_ABC;
    return cs_autoreleased_pointer([NSString stringWithFormat:@"%@ %@ %@", [array objectAtIndexedSubscript:0], [array objectAtIndexedSubscript:2],
                                      [cs_mab() objectAtIndexedSubscript:1]]);
}
static void *oracle_array_subarrayWithRange(void) {
    NSArray *array = CS_ABC;
    return cs_autoreleased_pointer([NSString stringWithFormat:@"%@ %@ %@ %@ %@", cs_list([array subarrayWithRange:NSMakeRange(0, 0)]),
                                      cs_list([array subarrayWithRange:NSMakeRange(3, 0)]),
                                      cs_list([array subarrayWithRange:NSMakeRange(1, 2)]),
                                      cs_list([array subarrayWithRange:NSMakeRange(0, 3)]),
                                      cs_list([[NSArray array] subarrayWithRange:NSMakeRange(0, 0)])]);
}
static void *oracle_array_objectsAtIndexes(void) {
    NSArray *array = CS_ABC;
    NSMutableIndexSet *some = [NSMutableIndexSet indexSetWithIndex:0];
    [some addIndex:2];
    return cs_autoreleased_pointer([NSString stringWithFormat:@"%@ %@ %@ %@", cs_list([array objectsAtIndexes:[NSIndexSet indexSet]]),
                                      cs_list([array objectsAtIndexes:some]),
                                      cs_list([array objectsAtIndexes:[NSIndexSet indexSetWithIndex:2]]),
                                      cs_list([[NSArray array] objectsAtIndexes:[NSIndexSet indexSet]])]);
}
static void *oracle_array_getObjects_range(void) {
    NSArray *array = CS_ABC;
    CS_UNRETAINED id buffer[4] = {@"-", @"-", @"-", @"-"};
    [array getObjects:buffer range:NSMakeRange(3, 0)];
    [array getObjects:buffer range:NSMakeRange(1, 2)];
    NSString *first = [NSString stringWithFormat:@"%@%@%@%@", buffer[0], buffer[1], buffer[2], buffer[3]];
    [cs_mab() getObjects:buffer range:NSMakeRange(0, 2)];
    return cs_autoreleased_pointer([NSString stringWithFormat:@"%@ %@%@%@%@", first, buffer[0], buffer[1], buffer[2], buffer[3]]);
}
static void *oracle_array_initWithObjects_count(void) {
    NSMutableString *out = [NSMutableString string];
    NSArray *numbers = cs_numbers(100);
    CS_UNRETAINED id objects[100];
    [numbers getObjects:objects range:NSMakeRange(0, 100)];
    NSArray *empty = [[NSArray alloc] initWithObjects:NULL count:0];
    NSArray *large = [[NSArray alloc] initWithObjects:objects count:100];
    NSMutableArray *mutable = [[NSMutableArray alloc] initWithObjects:objects count:3];
    [out appendFormat:@"%@ %lu %@ %@", cs_list(empty), (unsigned long)[large count], [large lastObject], cs_list(mutable)];
    CS_RELEASE(empty);
    CS_RELEASE(large);
    CS_RELEASE(mutable);
    return cs_autoreleased_pointer(out);
}
static void *oracle_array_arrayWithObjects_count(void) {
    NSArray *numbers = cs_numbers(40);
    CS_UNRETAINED id objects[40];
    [numbers getObjects:objects range:NSMakeRange(0, 40)];
    return cs_autoreleased_pointer([NSString stringWithFormat:@"%@ %@ %@ %lu %@", cs_list(@[]), cs_list(@[ @"a", @"b" ]),
                                      cs_list([NSArray arrayWithObjects:objects count:3]),
                                      (unsigned long)[[NSArray arrayWithObjects:objects count:40] count],
                                      cs_list([NSMutableArray arrayWithObjects:objects count:2])]);
}
static void *oracle_marray_addObject(void) {
    NSMutableArray *array = [NSMutableArray array];
    for (int i = 0; i < 40; i++) [array addObject:[NSNumber numberWithInt:i]];
    [array addObject:@"a"];
    return cs_autoreleased_pointer([NSString stringWithFormat:@"%lu %@", (unsigned long)[array count], [array lastObject]]);
}
static void *oracle_marray_insertObject_atIndex(void) {
    NSMutableArray *array = cs_mab();
    [array insertObject:@"end" atIndex:2];
    [array insertObject:@"start" atIndex:0];
    NSMutableArray *empty = [NSMutableArray array];
    [empty insertObject:@"only" atIndex:0];
    return cs_autoreleased_pointer([NSString stringWithFormat:@"%@ %@", cs_list(array), cs_list(empty)]);
}
static void *oracle_marray_removeObjectAtIndex(void) {
    NSMutableArray *array = [NSMutableArray arrayWithArray:CS_ABC];
    [array removeObjectAtIndex:2];
    [array removeObjectAtIndex:0];
    return cs_autoreleased_pointer(cs_list(array));
}
static void *oracle_marray_replaceObjectAtIndex(void) {
    NSMutableArray *array = [NSMutableArray arrayWithArray:CS_ABC];
    [array replaceObjectAtIndex:2 withObject:@"z"];
    [array replaceObjectAtIndex:0 withObject:@"y"];
    return cs_autoreleased_pointer(cs_list(array));
}
static void *oracle_marray_exchange(void) {
    NSMutableArray *array = [NSMutableArray arrayWithArray:CS_ABC];
    [array exchangeObjectAtIndex:0 withObjectAtIndex:2];
    NSString *first = cs_list(array);
    [array exchangeObjectAtIndex:1 withObjectAtIndex:1];
    return cs_autoreleased_pointer([NSString stringWithFormat:@"%@ %@", first, cs_list(array)]);
}
static void *oracle_marray_setObject_atIndexedSubscript(void) {
    NSMutableArray *array = cs_mab();
    [array setObject:@"appended" atIndexedSubscript:2];
    [array setObject:@"replaced" atIndexedSubscript:0];
    NSMutableArray *empty = [NSMutableArray array];
    [empty setObject:@"first" atIndexedSubscript:0];
    return cs_autoreleased_pointer([NSString stringWithFormat:@"%@ %@", cs_list(array), cs_list(empty)]);
}
static void *oracle_marray_removeObjectsInRange(void) {
    NSMutableArray *array = [NSMutableArray arrayWithArray:CS_ABC];
    [array removeObjectsInRange:NSMakeRange(3, 0)];
    [array removeObjectsInRange:NSMakeRange(0, 0)];
    NSString *unchanged = cs_list(array);
    [array removeObjectsInRange:NSMakeRange(1, 2)];
    NSMutableArray *all = cs_mab();
    [all removeObjectsInRange:NSMakeRange(0, 2)];
    return cs_autoreleased_pointer([NSString stringWithFormat:@"%@ %@ %@", unchanged, cs_list(array), cs_list(all)]);
}
static void *oracle_marray_insertObjects_atIndexes(void) {
    NSMutableArray *array = cs_mab();
    [array insertObjects:[NSArray array] atIndexes:[NSIndexSet indexSet]];
    NSString *unchanged = cs_list(array);
    [array insertObjects:[NSArray arrayWithObjects:@"x", @"y", nil]
               atIndexes:[NSIndexSet indexSetWithIndexesInRange:NSMakeRange(2, 2)]];
    NSString *atEnd = cs_list(array);
    NSMutableIndexSet *mixed = [NSMutableIndexSet indexSetWithIndex:0];
    [mixed addIndex:5];
    [array insertObjects:[NSArray arrayWithObjects:@"p", @"q", nil] atIndexes:mixed];
    return cs_autoreleased_pointer([NSString stringWithFormat:@"%@ %@ %@", unchanged, atEnd, cs_list(array)]);
}
static void *oracle_dictionary_initWithObjects_forKeys_count(void) {
    CS_UNRETAINED id objects[2] = {@"1", @"2"};
    CS_UNRETAINED id keys[2] = {@"a", @"b"};
    NSDictionary *empty = [[NSDictionary alloc] initWithObjects:NULL forKeys:NULL count:0];
    NSDictionary *two = [[NSDictionary alloc] initWithObjects:objects forKeys:keys count:2];
    NSMutableDictionary *mutable = [[NSMutableDictionary alloc] initWithObjects:objects forKeys:keys count:1];
    NSString *out = [NSString stringWithFormat:@"%@ %@ %@", cs_pairs(empty), cs_pairs(two), cs_pairs(mutable)];
    CS_RELEASE(empty);
    CS_RELEASE(two);
    CS_RELEASE(mutable);
    return cs_autoreleased_pointer(out);
}
static void *oracle_dictionary_dictionaryWithObjects_forKeys_count(void) {
    NSArray *numbers = cs_numbers(40);
    CS_UNRETAINED id objects[40];
    [numbers getObjects:objects range:NSMakeRange(0, 40)];
    return cs_autoreleased_pointer([NSString stringWithFormat:@"%@ %@ %lu %@", cs_pairs(@{}), cs_pairs(@{@"a" : @"1", @"b" : @"2"}),
                                      (unsigned long)[[NSDictionary dictionaryWithObjects:objects forKeys:objects count:40] count],
                                      cs_pairs([NSMutableDictionary dictionaryWithObjects:objects forKeys:objects count:2])]);
}
static void *oracle_mdictionary_setObject_forKey(void) {
    NSMutableDictionary *dictionary = [NSMutableDictionary dictionary];
    [dictionary setObject:@"1" forKey:@"a"];
    [dictionary setObject:@"2" forKey:@"a"];
    [dictionary setObject:[NSNull null] forKey:@"n"];
    return cs_autoreleased_pointer(cs_pairs(dictionary));
}
static void *oracle_mdictionary_setObject_forKeyedSubscript(void) {
    NSMutableDictionary *dictionary = [NSMutableDictionary dictionary];
    [dictionary setObject:@"1" forKeyedSubscript:@"a"];
    [dictionary setObject:@"2" forKeyedSubscript:@"b"];
    NSString *both = cs_pairs(dictionary);
    /* A nil value with a real key removes the key (legal, guarded or not). */
    [dictionary setObject:nil forKeyedSubscript:@"a"];
    [dictionary setObject:nil forKeyedSubscript:@"missing"];
    return cs_autoreleased_pointer([NSString stringWithFormat:@"%@ %@ %lu", both, cs_pairs(dictionary), (unsigned long)[dictionary count]]);
}
static void *oracle_mdictionary_removeObjectForKey(void) {
    NSMutableDictionary *dictionary = [NSMutableDictionary dictionaryWithObject:@"1" forKey:@"a"];
    [dictionary removeObjectForKey:@"missing"];
    NSString *unchanged = cs_pairs(dictionary);
    [dictionary removeObjectForKey:@"a"];
    return cs_autoreleased_pointer([NSString stringWithFormat:@"%@ %@", unchanged, cs_pairs(dictionary)]);
}
static void *oracle_set_initWithObjects_count(void) {
    CS_UNRETAINED id objects[3] = {@"b", @"a", @"b"};
    NSSet *empty = [[NSSet alloc] initWithObjects:NULL count:0];
    NSSet *set = [[NSSet alloc] initWithObjects:objects count:3];
    NSMutableSet *mutable = [[NSMutableSet alloc] initWithObjects:objects count:2];
    NSString *out = [NSString stringWithFormat:@"%@ %@ %@ %@", cs_list(empty), cs_list(set), cs_list(mutable),
                                               cs_list([NSSet setWithObjects:@"z", @"y", nil])];
    CS_RELEASE(empty);
    CS_RELEASE(set);
    CS_RELEASE(mutable);
    return cs_autoreleased_pointer(out);
}
static void *oracle_mset_addObject(void) {
    NSMutableSet *set = [NSMutableSet set];
    [set addObject:@"a"];
    [set addObject:@"a"];
    [set addObject:@"b"];
    return cs_autoreleased_pointer(cs_list(set));
}
static void *oracle_mset_removeObject(void) {
    NSMutableSet *set = [NSMutableSet setWithObjects:@"a", @"b", nil];
    [set removeObject:@"missing"];
    [set removeObject:@"a"];
    return cs_autoreleased_pointer(cs_list(set));
}
static void *oracle_oset_objectAtIndex(void) {
    NSOrderedSet *set = [NSOrderedSet orderedSetWithArray:cs_numbers(50)];
    return cs_autoreleased_pointer([NSString stringWithFormat:@"%@ %@ %@", [set objectAtIndex:0], [set objectAtIndex:49],
                                      [cs_moab() objectAtIndex:1]]);
}
static void *oracle_oset_objectAtIndexedSubscript(void) {
    NSOrderedSet *set = [NSOrderedSet orderedSetWithObjects:@"a", @"b", nil];
    return cs_autoreleased_pointer([NSString stringWithFormat:@"%@ %@", [set objectAtIndexedSubscript:0], [set objectAtIndexedSubscript:1]]);
}
static void *oracle_oset_initWithObjects_count(void) {
    CS_UNRETAINED id objects[3] = {@"b", @"a", @"b"};
    NSOrderedSet *empty = [[NSOrderedSet alloc] initWithObjects:NULL count:0];
    NSOrderedSet *set = [[NSOrderedSet alloc] initWithObjects:objects count:3];
    NSString *out = [NSString stringWithFormat:@"%@ %@", cs_list(empty), cs_list(set)];
    CS_RELEASE(empty);
    CS_RELEASE(set);
    return cs_autoreleased_pointer(out);
}
static void *oracle_moset_addObject(void) {
    NSMutableOrderedSet *set = cs_moab();
    [set addObject:@"a"];
    [set addObject:@"c"];
    return cs_autoreleased_pointer(cs_list(set));
}
static void *oracle_moset_removeObject(void) {
    NSMutableOrderedSet *set = cs_moab();
    [set removeObject:@"missing"];
    [set removeObject:@"a"];
    return cs_autoreleased_pointer(cs_list(set));
}
static void *oracle_moset_insertObject_atIndex(void) {
    NSMutableOrderedSet *set = cs_moab();
    [set insertObject:@"end" atIndex:2];
    [set insertObject:@"start" atIndex:0];
    return cs_autoreleased_pointer(cs_list(set));
}
static void *oracle_moset_removeObjectAtIndex(void) {
    NSMutableOrderedSet *set = cs_moab();
    [set removeObjectAtIndex:1];
    [set removeObjectAtIndex:0];
    return cs_autoreleased_pointer(cs_list(set));
}
static void *oracle_moset_replaceObjectAtIndex(void) {
    NSMutableOrderedSet *set = cs_moab();
    [set replaceObjectAtIndex:1 withObject:@"z"];
    return cs_autoreleased_pointer(cs_list(set));
}
static void *oracle_moset_setObject_atIndex(void) {
    NSMutableOrderedSet *set = cs_moab();
    [set setObject:@"appended" atIndex:2];
    [set setObject:@"replaced" atIndex:0];
    return cs_autoreleased_pointer(cs_list(set));
}
static void *oracle_moset_setObject_atIndexedSubscript(void) {
    NSMutableOrderedSet *set = cs_moab();
    [set setObject:@"appended" atIndexedSubscript:2];
    [set setObject:@"replaced" atIndexedSubscript:1];
    return cs_autoreleased_pointer(cs_list(set));
}
static void *oracle_moset_exchange(void) {
    NSMutableOrderedSet *set = [NSMutableOrderedSet orderedSetWithArray:CS_ABC];
    [set exchangeObjectAtIndex:0 withObjectAtIndex:2];
    NSString *first = cs_list(set);
    [set exchangeObjectAtIndex:1 withObjectAtIndex:1];
    return cs_autoreleased_pointer([NSString stringWithFormat:@"%@ %@", first, cs_list(set)]);
}
static void *oracle_moset_removeObjectsInRange(void) {
    NSMutableOrderedSet *set = [NSMutableOrderedSet orderedSetWithArray:CS_ABC];
    [set removeObjectsInRange:NSMakeRange(3, 0)];
    NSString *unchanged = cs_list(set);
    [set removeObjectsInRange:NSMakeRange(1, 2)];
    return cs_autoreleased_pointer([NSString stringWithFormat:@"%@ %@", unchanged, cs_list(set)]);
}
static void *oracle_moset_insertObjects_atIndexes(void) {
    NSMutableOrderedSet *set = cs_moab();
    [set insertObjects:[NSArray array] atIndexes:[NSIndexSet indexSet]];
    NSString *unchanged = cs_list(set);
    [set insertObjects:[NSArray arrayWithObjects:@"x", @"y", nil]
             atIndexes:[NSIndexSet indexSetWithIndexesInRange:NSMakeRange(2, 2)]];
    return cs_autoreleased_pointer([NSString stringWithFormat:@"%@ %@", unchanged, cs_list(set)]);
}
static void *oracle_cache_setObject_forKey(void) {
    NSCache *cache = CS_AUTORELEASE([[NSCache alloc] init]);
    [cache setObject:@"1" forKey:@"a"];
    [cache setObject:@"2" forKey:@"a"];
    return cs_autoreleased_pointer([NSString stringWithFormat:@"%@ %@", [cache objectForKey:@"a"], cs_describe([cache objectForKey:@"b"])]);
}
static void *oracle_cache_setObject_forKey_cost(void) {
    NSCache *cache = CS_AUTORELEASE([[NSCache alloc] init]);
    [cache setObject:@"1" forKey:@"a" cost:0];
    [cache setObject:@"2" forKey:@"b" cost:1000];
    return cs_autoreleased_pointer([NSString stringWithFormat:@"%@ %@", [cache objectForKey:@"a"], [cache objectForKey:@"b"]]);
}
static void *oracle_defaults_setObject_forKey(void) {
    NSUserDefaults *defaults = [NSUserDefaults standardUserDefaults];
    [defaults setObject:@"1" forKey:CS_DEFAULTS_KEY];
    NSString *set = [defaults objectForKey:CS_DEFAULTS_KEY];
    [defaults setObject:nil forKey:CS_DEFAULTS_KEY]; /* legal: removes the key */
    NSString *out = [NSString stringWithFormat:@"%@ %@", set, cs_describe([defaults objectForKey:CS_DEFAULTS_KEY])];
    [defaults removeObjectForKey:CS_DEFAULTS_KEY];
    return cs_autoreleased_pointer(out);
}
static void *oracle_defaults_objectForKey(void) {
    NSUserDefaults *defaults = [NSUserDefaults standardUserDefaults];
    NSString *missing = cs_describe([defaults objectForKey:@"CrashShieldTest.missing"]);
    [defaults setObject:@"v" forKey:CS_DEFAULTS_KEY];
    NSString *out = [NSString stringWithFormat:@"%@ %@", missing, [defaults objectForKey:CS_DEFAULTS_KEY]];
    [defaults removeObjectForKey:CS_DEFAULTS_KEY];
    return cs_autoreleased_pointer(out);
}
static void *oracle_defaults_removeObjectForKey(void) {
    NSUserDefaults *defaults = [NSUserDefaults standardUserDefaults];
    [defaults removeObjectForKey:@"CrashShieldTest.missing"];
    [defaults setObject:@"v" forKey:CS_DEFAULTS_KEY];
    [defaults removeObjectForKey:CS_DEFAULTS_KEY];
    return cs_autoreleased_pointer(cs_describe([defaults objectForKey:CS_DEFAULTS_KEY]));
}
static void *oracle_data_subdataWithRange(void) {
    NSData *data = cs_data_abc();
    return cs_autoreleased_pointer([NSString stringWithFormat:@"%@ %@ %@ %@", cs_bytes([data subdataWithRange:NSMakeRange(3, 0)]),
                                      cs_bytes([data subdataWithRange:NSMakeRange(0, 3)]),
                                      cs_bytes([data subdataWithRange:NSMakeRange(1, 1)]),
                                      cs_bytes([[NSData data] subdataWithRange:NSMakeRange(0, 0)])]);
}
static void *oracle_data_getBytes_range(void) {
    char buffer[4] = "----";
    [cs_data_abc() getBytes:buffer range:NSMakeRange(3, 0)];
    [cs_data_abc() getBytes:buffer range:NSMakeRange(1, 2)];
    NSMutableData *mutable = [NSMutableData dataWithBytes:"xyz" length:3];
    char other[4] = "----";
    [mutable getBytes:other range:NSMakeRange(0, 3)];
    return cs_autoreleased_pointer([NSString stringWithFormat:@"%.4s %.4s", buffer, other]);
}
static void *oracle_mdata_replaceBytesInRange(void) {
    NSMutableData *data = [NSMutableData dataWithBytes:"abc" length:3];
    [data replaceBytesInRange:NSMakeRange(3, 0) withBytes:"x"];
    [data replaceBytesInRange:NSMakeRange(0, 1) withBytes:"A"];
    NSString *first = cs_bytes(data);
    /* Legal: starts inside, ends past the end, so the data grows. */
    [data replaceBytesInRange:NSMakeRange(2, 4) withBytes:"WXYZ"];
    NSMutableData *append = [NSMutableData dataWithBytes:"ab" length:2];
    [append replaceBytesInRange:NSMakeRange(2, 2) withBytes:"cd"];
    return cs_autoreleased_pointer([NSString stringWithFormat:@"%@ %@ %@", first, cs_bytes(data), cs_bytes(append)]);
}
static void *oracle_mdata_resetBytesInRange(void) {
    NSMutableData *data = [NSMutableData dataWithBytes:"abc" length:3];
    [data resetBytesInRange:NSMakeRange(3, 0)];
    [data resetBytesInRange:NSMakeRange(1, 1)];
    NSString *first = cs_bytes(data);
    [data resetBytesInRange:NSMakeRange(0, 3)];
    return cs_autoreleased_pointer([NSString stringWithFormat:@"%@ %@", first, cs_bytes(data)]);
}

#pragma mark - Oracles: key-value coding collection proxies

/* A model whose collections are reached only through key-value coding proxies: `tags` and
 * `labels` have a getter and a setter only (the setter stores a copy, as most models do, so each
 * proxy mutation replaces and frees the collection the proxy read before), `fastTags` has
 * indexed accessors, `ivarTags` has none. `child` makes key paths. */
@interface CSScnTagModel : NSObject {
    __strong NSMutableArray *tags;
    __strong NSMutableSet *labels;
    __strong NSMutableArray *fastTags;
    __strong NSMutableArray *ivarTags;
    __strong CSScnTagModel *child;
}
@end

@implementation CSScnTagModel
- (id)init {
    if ((self = [super init]) != nil) {
        fastTags = [[NSMutableArray alloc] init];
        ivarTags = [[NSMutableArray alloc] init];
    }
    return self;
}
- (void)dealloc {
    CS_RELEASE(tags);
    CS_RELEASE(labels);
    CS_RELEASE(fastTags);
    CS_RELEASE(ivarTags);
    CS_RELEASE(child);
    CS_SUPER_DEALLOC();
}
- (NSArray *)tags { return tags; }
- (void)setTags:(NSArray *)value {
    NSMutableArray *copy = [value mutableCopy];
    CS_RELEASE(tags);
    tags = copy;
}
- (NSSet *)labels { return labels; }
- (void)setLabels:(NSSet *)value {
    NSMutableSet *copy = [value mutableCopy];
    CS_RELEASE(labels);
    labels = copy;
}
- (NSUInteger)countOfFastTags { return [fastTags count]; }
- (id)objectInFastTagsAtIndex:(NSUInteger)index { return [fastTags objectAtIndex:index]; }
- (void)insertObject:(id)object inFastTagsAtIndex:(NSUInteger)index { [fastTags insertObject:object atIndex:index]; }
- (void)removeObjectFromFastTagsAtIndex:(NSUInteger)index { [fastTags removeObjectAtIndex:index]; }
- (CSScnTagModel *)child { return child; }
- (void)setChild:(CSScnTagModel *)value {
    id old = child;
    child = CS_RETAIN(value);
    CS_RELEASE(old);
}
@end

/** Counts the KVO notifications it receives. */
@interface CSScnChangeCounter : NSObject {
  @public
    unsigned changes;
}
@end
@implementation CSScnChangeCounter
- (void)observeValueForKeyPath:(NSString *)keyPath ofObject:(id)object change:(NSDictionary *)change context:(void *)context {
    changes++;
}
@end

/* Every mutation below uses a proxy made for it, except the issue's sequence, which keeps one
 * proxy for three mutations exactly as reported. GNUstep's own proxy -count/-objectAtIndex: read
 * a collection cached without a retain, so reading through a proxy after it mutated is not
 * legal use on this platform and is not done here. */
static NSString *cs_kvc_array_proxy_run(BOOL observed) {
    CSScnTagModel *model = [[CSScnTagModel alloc] init];
    CSScnChangeCounter *counter = [[CSScnChangeCounter alloc] init];
    if (observed) {
        [model addObserver:counter forKeyPath:@"tags" options:0 context:NULL];
        [model addObserver:counter forKeyPath:@"fastTags" options:0 context:NULL];
        [model addObserver:counter forKeyPath:@"ivarTags" options:0 context:NULL];
    }
    [model setTags:[NSMutableArray arrayWithObject:@"a"]];
    NSMutableArray *proxy = [model mutableArrayValueForKey:@"tags"];
    [proxy addObject:@"b"];
    [proxy insertObject:@"0" atIndex:0];
    [proxy removeObjectAtIndex:1]; /* the issue's case: legal, tags = (0,b) */
    NSMutableString *out = [NSMutableString stringWithFormat:@"tags %@", cs_list([model tags])];
    [[model mutableArrayValueForKey:@"tags"] replaceObjectAtIndex:1 withObject:@"B"];
    [[model mutableArrayValueForKey:@"tags"] insertObject:@"end" atIndex:2];
    [[model mutableArrayValueForKey:@"tags"] removeObjectAtIndex:0];
    [[model mutableArrayValueForKey:@"tags"] removeLastObject];
    [out appendFormat:@" %@ %@", cs_list([model tags]), [[model mutableArrayValueForKey:@"tags"] objectAtIndex:0]];
    for (NSString *key in [NSArray arrayWithObjects:@"fastTags", @"ivarTags", nil]) {
        [[model mutableArrayValueForKey:key] addObject:@"x"];
        [[model mutableArrayValueForKey:key] insertObject:@"w" atIndex:0];
        [[model mutableArrayValueForKey:key] insertObject:@"y" atIndex:2];
        [[model mutableArrayValueForKey:key] replaceObjectAtIndex:1 withObject:@"X"];
        [[model mutableArrayValueForKey:key] removeObjectAtIndex:0];
        [out appendFormat:@" %@ %@ %lu", key, cs_list([model valueForKey:key]),
                          (unsigned long)[[model mutableArrayValueForKey:key] count]];
    }
    if (observed) {
        [model removeObserver:counter forKeyPath:@"tags"];
        [model removeObserver:counter forKeyPath:@"fastTags"];
        [model removeObserver:counter forKeyPath:@"ivarTags"];
        [out appendFormat:@" notifications %u", counter->changes];
    }
    CS_RELEASE(counter);
    CS_RELEASE(model);
    return out;
}
static void *oracle_kvc_array_proxy(void) {
    return cs_autoreleased_pointer(cs_kvc_array_proxy_run(NO));
}
static void *oracle_kvc_array_proxy_observed(void) {
    return cs_autoreleased_pointer(cs_kvc_array_proxy_run(YES));
}
static void *oracle_kvc_array_proxy_key_path(void) {
    CSScnTagModel *model = [[CSScnTagModel alloc] init];
    CSScnTagModel *child = [[CSScnTagModel alloc] init];
    [model setChild:child];
    [child setTags:[NSArray arrayWithObject:@"a"]];
    NSMutableArray *proxy = [model mutableArrayValueForKeyPath:@"child.tags"];
    [proxy addObject:@"b"];
    [proxy insertObject:@"0" atIndex:0];
    [proxy removeObjectAtIndex:1];
    NSString *out = [NSString stringWithFormat:@"child.tags %@", cs_list([child tags])];
    CS_RELEASE(child);
    CS_RELEASE(model);
    return cs_autoreleased_pointer(out);
}
static NSString *cs_kvc_set_proxy_run(BOOL observed) {
    CSScnTagModel *model = [[CSScnTagModel alloc] init];
    CSScnChangeCounter *counter = [[CSScnChangeCounter alloc] init];
    if (observed) [model addObserver:counter forKeyPath:@"labels" options:0 context:NULL];
    [model setLabels:[NSSet setWithObject:@"a"]];
    NSMutableSet *proxy = [model mutableSetValueForKey:@"labels"];
    [proxy addObject:@"b"];
    [proxy addObject:@"c"];
    [proxy removeObject:@"a"];
    NSMutableString *out = [NSMutableString stringWithFormat:@"labels %@", cs_list([model labels])];
    [[model mutableSetValueForKey:@"labels"] removeObject:@"missing"];
    [[model mutableSetValueForKeyPath:@"labels"] addObject:@"d"];
    [out appendFormat:@" %@", cs_list([model labels])];
    if (observed) {
        [model removeObserver:counter forKeyPath:@"labels"];
        [out appendFormat:@" notifications %u", counter->changes];
    }
    CS_RELEASE(counter);
    CS_RELEASE(model);
    return out;
}
bool cs_containers_kvc_proxy_misuse(void) {
    bool ok;
    @autoreleasepool {
        CSScnTagModel *model = [[CSScnTagModel alloc] init];
        [model setTags:[NSArray arrayWithObjects:@"a", @"b", nil]];
        [[model mutableArrayValueForKey:@"tags"] removeObjectAtIndex:cs_opaque_index(9)];
        [[model mutableArrayValueForKey:@"ivarTags"] addObject:@"x"];
        [[model mutableArrayValueForKey:@"ivarTags"] removeObjectAtIndex:cs_opaque_index(9)];
        ok = [[model tags] isEqual:CS_AB] && [[model valueForKey:@"ivarTags"] isEqual:[NSArray arrayWithObject:@"x"]];
        CS_RELEASE(model);
    }
    return ok;
}
static void *oracle_kvc_set_proxy(void) {
    return cs_autoreleased_pointer(cs_kvc_set_proxy_run(NO));
}
static void *oracle_kvc_set_proxy_observed(void) {
    return cs_autoreleased_pointer(cs_kvc_set_proxy_run(YES));
}

#pragma mark - Oracles: selectors added by the selector survey

static void *oracle_marray_removeLastObject(void) {
    NSMutableArray *array = [NSMutableArray arrayWithArray:CS_ABC];
    [array removeLastObject];
    NSMutableArray *one = [NSMutableArray arrayWithObject:@"only"];
    [one removeLastObject];
    return cs_autoreleased_pointer([NSString stringWithFormat:@"%@ %@", cs_list(array), cs_list(one)]);
}
static void *oracle_marray_replaceObjectsInRange(void) {
    NSMutableString *out = [NSMutableString string];
    NSRange ranges[] = {NSMakeRange(0, 0), NSMakeRange(3, 0), NSMakeRange(1, 2), NSMakeRange(0, 3)};
    for (size_t i = 0; i < sizeof ranges / sizeof ranges[0]; i++) {
        NSMutableArray *array = [NSMutableArray arrayWithArray:CS_ABC];
        [array replaceObjectsInRange:ranges[i] withObjectsFromArray:[NSArray arrayWithObjects:@"x", @"y", nil]];
        NSMutableArray *removed = [NSMutableArray arrayWithArray:CS_ABC];
        [removed replaceObjectsInRange:ranges[i] withObjectsFromArray:nil];
        [out appendFormat:@"%@ %@ ", cs_list(array), cs_list(removed)];
    }
    return cs_autoreleased_pointer(out);
}
static void *oracle_marray_replaceObjectsInRange_range(void) {
    NSMutableString *out = [NSMutableString string];
    NSArray *source = [NSArray arrayWithObjects:@"x", @"y", nil];
    NSRange sources[] = {NSMakeRange(0, 0), NSMakeRange(2, 0), NSMakeRange(0, 2), NSMakeRange(1, 1)};
    for (size_t i = 0; i < sizeof sources / sizeof sources[0]; i++) {
        NSMutableArray *array = [NSMutableArray arrayWithArray:CS_ABC];
        [array replaceObjectsInRange:NSMakeRange(1, 1) withObjectsFromArray:source range:sources[i]];
        NSMutableArray *end = [NSMutableArray arrayWithArray:CS_ABC];
        [end replaceObjectsInRange:NSMakeRange(3, 0) withObjectsFromArray:source range:sources[i]];
        [out appendFormat:@"%@ %@ ", cs_list(array), cs_list(end)];
    }
    return cs_autoreleased_pointer(out);
}
static void *oracle_array_arrayByAddingObject(void) {
    NSArray *empty = [[NSArray array] arrayByAddingObject:@"a"];
    NSArray *more = [CS_ABC arrayByAddingObject:@"d"];
    NSArray *fromMutable = [cs_mab() arrayByAddingObject:@"c"];
    return cs_autoreleased_pointer([NSString stringWithFormat:@"%@ %@ %@", cs_list(empty), cs_list(more), cs_list(fromMutable)]);
}
static void *oracle_mdata_replaceBytesInRange_length(void) {
    NSMutableString *out = [NSMutableString string];
    NSRange ranges[] = {NSMakeRange(0, 0), NSMakeRange(3, 0), NSMakeRange(1, 2), NSMakeRange(0, 3), NSMakeRange(1, 1)};
    NSUInteger lengths[] = {0, 1, 4};
    for (size_t i = 0; i < sizeof ranges / sizeof ranges[0]; i++) {
        for (size_t l = 0; l < sizeof lengths / sizeof lengths[0]; l++) {
            NSMutableData *data = [NSMutableData dataWithBytes:"abc" length:3];
            [data replaceBytesInRange:ranges[i] withBytes:"WXYZ" length:lengths[l]];
            [out appendFormat:@"%@ ", cs_bytes(data)];
        }
    }
    NSMutableData *cleared = [NSMutableData dataWithBytes:"abc" length:3];
    [cleared replaceBytesInRange:NSMakeRange(0, 3) withBytes:NULL length:0];
    [out appendString:cs_bytes(cleared)];
    return cs_autoreleased_pointer(out);
}

static const cs_oracle kOracles[] = {
    {"NSMutableArray removeLastObject", oracle_marray_removeLastObject},
    {"NSMutableArray replaceObjectsInRange:withObjectsFromArray:", oracle_marray_replaceObjectsInRange},
    {"NSMutableArray replaceObjectsInRange:withObjectsFromArray:range:", oracle_marray_replaceObjectsInRange_range},
    {"NSArray arrayByAddingObject:", oracle_array_arrayByAddingObject},
    {"NSMutableData replaceBytesInRange:withBytes:length:", oracle_mdata_replaceBytesInRange_length},
    {"NSArray objectAtIndex:", oracle_array_objectAtIndex},
    {"NSArray objectAtIndexedSubscript:", oracle_array_objectAtIndexedSubscript},
    {"NSArray subarrayWithRange:", oracle_array_subarrayWithRange},
    {"NSArray objectsAtIndexes:", oracle_array_objectsAtIndexes},
    {"NSArray getObjects:range:", oracle_array_getObjects_range},
    {"NSArray initWithObjects:count:", oracle_array_initWithObjects_count},
    {"NSArray arrayWithObjects:count:", oracle_array_arrayWithObjects_count},
    {"NSMutableArray addObject:", oracle_marray_addObject},
    {"NSMutableArray insertObject:atIndex:", oracle_marray_insertObject_atIndex},
    {"NSMutableArray removeObjectAtIndex:", oracle_marray_removeObjectAtIndex},
    {"NSMutableArray replaceObjectAtIndex:withObject:", oracle_marray_replaceObjectAtIndex},
    {"NSMutableArray exchangeObjectAtIndex:withObjectAtIndex:", oracle_marray_exchange},
    {"NSMutableArray setObject:atIndexedSubscript:", oracle_marray_setObject_atIndexedSubscript},
    {"NSMutableArray removeObjectsInRange:", oracle_marray_removeObjectsInRange},
    {"NSMutableArray insertObjects:atIndexes:", oracle_marray_insertObjects_atIndexes},
    {"NSDictionary initWithObjects:forKeys:count:", oracle_dictionary_initWithObjects_forKeys_count},
    {"NSDictionary dictionaryWithObjects:forKeys:count:", oracle_dictionary_dictionaryWithObjects_forKeys_count},
    {"NSMutableDictionary setObject:forKey:", oracle_mdictionary_setObject_forKey},
    {"NSMutableDictionary setObject:forKeyedSubscript:", oracle_mdictionary_setObject_forKeyedSubscript},
    {"NSMutableDictionary removeObjectForKey:", oracle_mdictionary_removeObjectForKey},
    {"NSSet initWithObjects:count:", oracle_set_initWithObjects_count},
    {"NSMutableSet addObject:", oracle_mset_addObject},
    {"NSMutableSet removeObject:", oracle_mset_removeObject},
    {"NSOrderedSet objectAtIndex:", oracle_oset_objectAtIndex},
    {"NSOrderedSet objectAtIndexedSubscript:", oracle_oset_objectAtIndexedSubscript},
    {"NSOrderedSet initWithObjects:count:", oracle_oset_initWithObjects_count},
    {"NSMutableOrderedSet addObject:", oracle_moset_addObject},
    {"NSMutableOrderedSet removeObject:", oracle_moset_removeObject},
    {"NSMutableOrderedSet insertObject:atIndex:", oracle_moset_insertObject_atIndex},
    {"NSMutableOrderedSet removeObjectAtIndex:", oracle_moset_removeObjectAtIndex},
    {"NSMutableOrderedSet replaceObjectAtIndex:withObject:", oracle_moset_replaceObjectAtIndex},
    {"NSMutableOrderedSet setObject:atIndex:", oracle_moset_setObject_atIndex},
    {"NSMutableOrderedSet setObject:atIndexedSubscript:", oracle_moset_setObject_atIndexedSubscript},
    {"NSMutableOrderedSet exchangeObjectAtIndex:withObjectAtIndex:", oracle_moset_exchange},
    {"NSMutableOrderedSet removeObjectsInRange:", oracle_moset_removeObjectsInRange},
    {"NSMutableOrderedSet insertObjects:atIndexes:", oracle_moset_insertObjects_atIndexes},
    {"NSCache setObject:forKey:", oracle_cache_setObject_forKey},
    {"NSCache setObject:forKey:cost:", oracle_cache_setObject_forKey_cost},
    {"NSUserDefaults setObject:forKey:", oracle_defaults_setObject_forKey},
    {"NSUserDefaults objectForKey:", oracle_defaults_objectForKey},
    {"NSUserDefaults removeObjectForKey:", oracle_defaults_removeObjectForKey},
    {"NSData subdataWithRange:", oracle_data_subdataWithRange},
    {"NSData getBytes:range:", oracle_data_getBytes_range},
    {"NSMutableData replaceBytesInRange:withBytes:", oracle_mdata_replaceBytesInRange},
    {"NSMutableData resetBytesInRange:", oracle_mdata_resetBytesInRange},
    {"NSMutableArray KVC proxy (mutableArrayValueForKey:)", oracle_kvc_array_proxy},
    {"NSMutableArray KVC proxy (mutableArrayValueForKey:, key observed)", oracle_kvc_array_proxy_observed},
    {"NSMutableArray KVC proxy (mutableArrayValueForKeyPath:)", oracle_kvc_array_proxy_key_path},
    {"NSMutableSet KVC proxy (mutableSetValueForKey:)", oracle_kvc_set_proxy},
    {"NSMutableSet KVC proxy (mutableSetValueForKey:, key observed)", oracle_kvc_set_proxy_observed},
};
const cs_oracle_table cs_container_oracles = CS_TABLE(kOracles);

#pragma mark - Stress (cs_containers_stress)

/* Shared containers receive legal reads and misuse only: with the guard on, every misuse is a
 * read-only no-op, so concurrent use is as safe as concurrent reads. Legal mutations go to
 * per-thread containers. */
/* The containers are borrowed from cs_containers_stress's autorelease pool (CS_POOLED). */
typedef struct {
    CS_UNRETAINED NSArray *array;
    CS_UNRETAINED NSMutableArray *mutableArray;
    CS_UNRETAINED NSMutableDictionary *dictionary;
    CS_UNRETAINED NSCache *cache;
    CS_UNRETAINED NSData *data;
    unsigned iterations;
    uint64_t misuses;  /* __atomic */
    int failed;        /* __atomic */
} cs_stress_state;

static cs_stress_state g_stress;

static void cs_stress_fail(void) {
    __atomic_store_n(&g_stress.failed, 1, __ATOMIC_RELAXED);
}

/* Plain pthreads, not NSThread: in a process whose main thread never touched GNUstep (the Swift
 * test runner), GNUstep can take a detached NSThread for its default thread and exit(0) the
 * whole process when that thread ends (seen under gdb: exit(0) from the thread launcher). */
static void *cs_stress_thread(void *unused) {
    (void)unused;
#if defined(GNUSTEP)
    GSRegisterCurrentThread();
#endif
    @autoreleasepool {
        NSMutableArray *own = [NSMutableArray array];
        NSCache *ownCache = CS_AUTORELEASE([[NSCache alloc] init]);
        uint64_t misuses = 0;
        for (unsigned i = 0; i < g_stress.iterations; i++) {
            @autoreleasepool {
                NSNumber *number = [NSNumber numberWithUnsignedInt:i];
                if (![[g_stress.array objectAtIndex:i % 3] isEqual:[CS_ABC objectAtIndex:i % 3]]) cs_stress_fail();
                if ([g_stress.array objectAtIndex:cs_opaque_index(3 + i)] != nil) cs_stress_fail();
                misuses++;
                if (![[g_stress.array subarrayWithRange:NSMakeRange(2, cs_opaque_index(5))]
                        isEqual:[NSArray arrayWithObject:@"c"]])
                    cs_stress_fail();
                misuses++;

                if (![[g_stress.mutableArray objectAtIndex:1] isEqual:@"b"]) cs_stress_fail();
                [g_stress.mutableArray addObject:cs_opaque(nil)];
                [g_stress.mutableArray insertObject:number atIndex:cs_opaque_index(9)];
                [g_stress.mutableArray removeObjectAtIndex:cs_opaque_index(7)];
                misuses += 3;

                if (![[g_stress.dictionary objectForKey:@"a"] isEqual:@"1"]) cs_stress_fail();
                [g_stress.dictionary setObject:number forKey:cs_opaque(nil)];
                [g_stress.dictionary setObject:cs_opaque(nil) forKey:@"a"];
                misuses += 2;

                [g_stress.cache setObject:number forKey:cs_opaque(nil)];
                misuses++;
                [ownCache setObject:number forKey:@"k"];
                if (![[ownCache objectForKey:@"k"] isEqual:number]) cs_stress_fail();

                char bytes[8] = "--------";
                [g_stress.data getBytes:bytes range:NSMakeRange(0, 3)];
                if (memcmp(bytes, "abc", 3) != 0) cs_stress_fail();
                memset(bytes, '-', sizeof bytes);
                [g_stress.data getBytes:bytes range:NSMakeRange(1, cs_opaque_index(9))];
                if (memcmp(bytes, "--------", 8) != 0) cs_stress_fail();
                misuses++;

                id missing = cs_opaque(nil);
                if ([@[ number, missing ] count] != 1) cs_stress_fail();
                misuses++;

                [own addObject:number];
                if ([own count] > 4) [own removeObjectAtIndex:0];
                if (![[own lastObject] isEqual:number]) cs_stress_fail();
            }
        }
        __atomic_fetch_add(&g_stress.misuses, misuses, __ATOMIC_RELAXED);
    }
#if defined(GNUSTEP)
    GSUnregisterCurrentThread();
#endif
    return NULL;
}

uint64_t cs_containers_stress(unsigned threads, unsigned iterations) {
    uint64_t result;
    @autoreleasepool {
        g_stress.array = CS_POOLED(CS_ABC);
        g_stress.mutableArray = CS_POOLED(cs_mab());
        g_stress.dictionary = CS_POOLED(cs_mdict_a1());
        g_stress.cache = CS_POOLED(CS_AUTORELEASE([[NSCache alloc] init]));
        g_stress.data = CS_POOLED(cs_data_abc());
        g_stress.iterations = iterations;
        g_stress.misuses = 0;
        g_stress.failed = 0;
        pthread_t ids[64];
        unsigned started = 0;
        for (unsigned t = 0; t < threads && t < 64; t++)
            if (pthread_create(&ids[started], NULL, cs_stress_thread, NULL) == 0) started++;
        for (unsigned t = 0; t < started; t++) pthread_join(ids[t], NULL);
        if (started != threads) __atomic_store_n(&g_stress.failed, 1, __ATOMIC_RELAXED);
        BOOL intact = [g_stress.mutableArray isEqual:CS_AB] && [g_stress.dictionary isEqual:cs_dict_a1()] &&
                      [g_stress.data isEqual:cs_data_abc()];
        result = (intact && !__atomic_load_n(&g_stress.failed, __ATOMIC_RELAXED))
                     ? __atomic_load_n(&g_stress.misuses, __ATOMIC_RELAXED)
                     : UINT64_MAX;
        memset(&g_stress, 0, sizeof g_stress);
    }
    return result;
}

#pragma mark - Randomized (cs_containers_randomized)

static uint64_t cs_next(uint64_t *state) { /* splitmix64 */
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
static NSUInteger cs_pick(uint64_t *state, NSUInteger below) {
    return below == 0 ? 0 : (NSUInteger)(cs_next(state) % below);
}
/** A location or length: usually small around `count`, sometimes close to NSUIntegerMax. */
static NSUInteger cs_pick_extent(uint64_t *state, NSUInteger count) {
    return cs_pick(state, 8) == 0 ? NSUIntegerMax - cs_pick(state, 4) : cs_pick(state, count + 4);
}
static BOOL cs_within(NSRange range, NSUInteger count) {
    return range.location <= count && range.length <= count - range.location;
}
static NSRange cs_clamped(NSRange range, NSUInteger count) {
    if (range.location >= count) return NSMakeRange(count, 0);
    NSUInteger available = count - range.location;
    return NSMakeRange(range.location, range.length < available ? range.length : available);
}

typedef struct {
    uint64_t state, misuses, mismatches;
    NSUInteger model[64];
    NSUInteger modelCount;
    CS_UNRETAINED NSMutableArray *array; /* the three containers: borrowed from the run's pool */
    unsigned values[8]; /* keyed model: key i -> 1 + value number, 0 when absent */
    CS_UNRETAINED NSMutableDictionary *dictionary;
    unsigned char bytes[64];
    NSUInteger byteCount;
    CS_UNRETAINED NSMutableData *data;
} cs_fuzz;

static void cs_fuzz_check(cs_fuzz *f, BOOL ok) {
    if (!ok) f->mismatches++;
}
static BOOL cs_fuzz_array_matches(cs_fuzz *f) {
    if ([f->array count] != f->modelCount) return NO;
    for (NSUInteger i = 0; i < f->modelCount; i++)
        if ([[f->array objectAtIndex:i] unsignedIntegerValue] != f->model[i]) return NO;
    return YES;
}
static BOOL cs_fuzz_dictionary_matches(cs_fuzz *f) {
    NSUInteger present = 0;
    for (int k = 0; k < 8; k++) {
        id value = [f->dictionary objectForKey:[NSString stringWithFormat:@"k%d", k]];
        if (f->values[k] == 0 ? value != nil
                              : ![[NSString stringWithFormat:@"v%u", f->values[k] - 1] isEqual:value])
            return NO;
        if (f->values[k]) present++;
    }
    return [f->dictionary count] == present;
}
static BOOL cs_fuzz_data_matches(cs_fuzz *f) {
    return [f->data length] == f->byteCount && memcmp([f->data bytes], f->bytes, f->byteCount) == 0;
}

static void cs_fuzz_step(cs_fuzz *f) {
    uint64_t *s = &f->state;
    NSUInteger count = f->modelCount;
    switch (cs_pick(s, 12)) {
    case 0: { /* objectAtIndex: on the mutable array and an immutable copy */
        NSUInteger index = cs_pick(s, 4) == 0 ? NSUIntegerMax - cs_pick(s, 2) : cs_pick(s, count + 3);
        NSArray *copy = [NSArray arrayWithArray:f->array];
        id got = [copy objectAtIndex:index];
        if (index >= count) {
            f->misuses++;
            cs_fuzz_check(f, got == nil);
        } else {
            cs_fuzz_check(f, [got unsignedIntegerValue] == f->model[index]);
        }
        break;
    }
    case 1: { /* subarrayWithRange: */
        NSRange range = cs_raw_range(cs_pick_extent(s, count), cs_pick_extent(s, count));
        NSArray *got = [f->array subarrayWithRange:range];
        if (!cs_within(range, count)) f->misuses++;
        NSRange valid = cs_clamped(range, count);
        BOOL ok = [got count] == valid.length;
        for (NSUInteger i = 0; ok && i < valid.length; i++)
            ok = [[got objectAtIndex:i] unsignedIntegerValue] == f->model[valid.location + i];
        cs_fuzz_check(f, ok);
        break;
    }
    case 2: { /* getObjects:range: */
        NSRange range = cs_raw_range(cs_pick_extent(s, count), cs_pick_extent(s, count));
        CS_UNRETAINED id buffer[64];
        for (int i = 0; i < 64; i++) buffer[i] = @"-";
        [f->array getObjects:buffer range:range];
        BOOL within = cs_within(range, count);
        if (!within) f->misuses++;
        /* A neutralised call writes nothing. */
        NSUInteger copied = within ? range.length : 0;
        BOOL ok = YES;
        for (NSUInteger i = 0; ok && i < 64; i++)
            ok = i < copied ? [buffer[i] unsignedIntegerValue] == f->model[range.location + i]
                            : [buffer[i] isEqual:@"-"];
        cs_fuzz_check(f, ok);
        break;
    }
    case 3: { /* insertObject:atIndex: (nil or beyond is a no-op) */
        if (count >= 48) break;
        NSUInteger index = cs_pick(s, count + 3);
        BOOL nilObject = cs_pick(s, 4) == 0;
        NSUInteger value = cs_pick(s, 1000);
        [f->array insertObject:(nilObject ? cs_opaque(nil) : [NSNumber numberWithUnsignedInteger:value]) atIndex:index];
        if (nilObject || index > count) {
            f->misuses++;
        } else {
            memmove(&f->model[index + 1], &f->model[index], (count - index) * sizeof(NSUInteger));
            f->model[index] = value;
            f->modelCount++;
        }
        cs_fuzz_check(f, cs_fuzz_array_matches(f));
        break;
    }
    case 4: { /* removeObjectAtIndex: */
        NSUInteger index = cs_pick(s, count + 2);
        [f->array removeObjectAtIndex:index];
        if (index >= count) {
            f->misuses++;
        } else {
            memmove(&f->model[index], &f->model[index + 1], (count - index - 1) * sizeof(NSUInteger));
            f->modelCount--;
        }
        cs_fuzz_check(f, cs_fuzz_array_matches(f));
        break;
    }
    case 5: { /* replaceObjectAtIndex:withObject: */
        NSUInteger index = cs_pick(s, count + 2);
        BOOL nilObject = cs_pick(s, 4) == 0;
        NSUInteger value = cs_pick(s, 1000);
        [f->array replaceObjectAtIndex:index
                            withObject:(nilObject ? cs_opaque(nil) : [NSNumber numberWithUnsignedInteger:value])];
        if (index >= count || nilObject) f->misuses++;
        else f->model[index] = value;
        cs_fuzz_check(f, cs_fuzz_array_matches(f));
        break;
    }
    case 6: { /* removeObjectsInRange: */
        NSRange range = cs_raw_range(cs_pick_extent(s, count), cs_pick(s, 3) == 0 ? cs_pick_extent(s, count) : cs_pick(s, 3));
        [f->array removeObjectsInRange:range];
        if (!cs_within(range, count)) {
            f->misuses++;
        } else {
            memmove(&f->model[range.location], &f->model[range.location + range.length],
                    (count - range.location - range.length) * sizeof(NSUInteger));
            f->modelCount -= range.length;
        }
        cs_fuzz_check(f, cs_fuzz_array_matches(f));
        break;
    }
    case 7: { /* setObject:forKey: (nil key or value is a no-op) */
        int k = (int)cs_pick(s, 8);
        BOOL nilKey = cs_pick(s, 4) == 0, nilValue = cs_pick(s, 4) == 0;
        unsigned number = (unsigned)cs_pick(s, 100);
        NSString *value = [NSString stringWithFormat:@"v%u", number];
        [f->dictionary setObject:(nilValue ? cs_opaque(nil) : value)
                          forKey:(nilKey ? cs_opaque(nil) : [NSString stringWithFormat:@"k%d", k])];
        if (nilKey || nilValue) f->misuses++;
        else f->values[k] = number + 1;
        cs_fuzz_check(f, cs_fuzz_dictionary_matches(f));
        break;
    }
    case 8: { /* setObject:forKeyedSubscript: (nil key is a no-op; nil value removes) */
        int k = (int)cs_pick(s, 8);
        BOOL nilKey = cs_pick(s, 4) == 0, nilValue = cs_pick(s, 3) == 0;
        unsigned number = (unsigned)cs_pick(s, 100);
        NSString *value = [NSString stringWithFormat:@"v%u", number];
        [f->dictionary setObject:(nilValue ? cs_opaque(nil) : value)
               forKeyedSubscript:(nilKey ? cs_opaque(nil) : [NSString stringWithFormat:@"k%d", k])];
        if (nilKey) f->misuses++;
        else f->values[k] = nilValue ? 0 : number + 1;
        cs_fuzz_check(f, cs_fuzz_dictionary_matches(f));
        break;
    }
    case 9: { /* getBytes:range: and subdataWithRange: */
        NSUInteger length = f->byteCount;
        NSRange range = cs_raw_range(cs_pick_extent(s, length), cs_pick_extent(s, length));
        unsigned char buffer[64];
        memset(buffer, 0xEE, sizeof buffer);
        [f->data getBytes:buffer range:range];
        NSData *sub = [f->data subdataWithRange:range];
        BOOL within = cs_within(range, length);
        if (!within) f->misuses += 2;
        NSRange valid = cs_clamped(range, length);
        /* A neutralised -getBytes:range: writes nothing; -subdataWithRange: gives the valid part. */
        NSUInteger copied = within ? range.length : 0;
        BOOL ok = (copied == 0 || memcmp(buffer, f->bytes + range.location, copied) == 0) && [sub length] == valid.length &&
                  memcmp([sub bytes], f->bytes + valid.location, valid.length) == 0;
        for (NSUInteger i = copied; ok && i < sizeof buffer; i++) ok = buffer[i] == 0xEE;
        cs_fuzz_check(f, ok);
        break;
    }
    case 10: { /* resetBytesInRange: (GNUstep: the whole range must lie inside the data) */
        NSUInteger length = f->byteCount;
        NSRange range = cs_raw_range(cs_pick_extent(s, length), cs_pick_extent(s, length));
        [f->data resetBytesInRange:range];
        if (!cs_within(range, length)) f->misuses++;
        else memset(f->bytes + range.location, 0, range.length);
        cs_fuzz_check(f, cs_fuzz_data_matches(f));
        break;
    }
    default: { /* replaceBytesInRange:withBytes: (may grow the data; must start inside, must not wrap) */
        NSUInteger length = f->byteCount;
        BOOL wrap = cs_pick(s, 6) == 0;
        NSRange range = cs_raw_range(cs_pick(s, length + 3), cs_pick(s, 4));
        if (wrap) { /* location + length > NSUIntegerMax */
            range.location += 1;
            range.length = NSUIntegerMax - cs_pick(s, range.location);
        }
        if (!wrap && range.location + range.length > 60) break;
        const unsigned char replacement[4] = {0xA1, 0xA2, 0xA3, 0xA4};
        [f->data replaceBytesInRange:range withBytes:replacement];
        if (wrap || range.location > length) {
            f->misuses++;
        } else {
            memcpy(f->bytes + range.location, replacement, range.length);
            if (range.location + range.length > length) f->byteCount = range.location + range.length;
        }
        cs_fuzz_check(f, cs_fuzz_data_matches(f));
        break;
    }
    }
}

uint64_t cs_containers_randomized(uint64_t seed, unsigned iterations, uint64_t *misuses) {
    cs_fuzz f;
    memset(&f, 0, sizeof f);
    f.state = seed;
    uint64_t mismatches;
    @autoreleasepool {
        f.array = CS_POOLED([NSMutableArray array]);
        f.dictionary = CS_POOLED([NSMutableDictionary dictionary]);
        f.byteCount = 8;
        for (NSUInteger i = 0; i < f.byteCount; i++) f.bytes[i] = (unsigned char)('a' + i);
        f.data = CS_POOLED([NSMutableData dataWithBytes:f.bytes length:f.byteCount]);
        for (NSUInteger i = 0; i < 6; i++) {
            f.model[i] = i;
            [f.array addObject:[NSNumber numberWithUnsignedInteger:i]];
        }
        f.modelCount = 6;
        for (unsigned i = 0; i < iterations; i++) {
            @autoreleasepool {
                cs_fuzz_step(&f);
            }
        }
        mismatches = f.mismatches;
    }
    if (misuses) *misuses = f.misuses;
    return mismatches;
}

#pragma mark - Guarded-only misuse (cs_containers_nil_index_set_misuse)

bool cs_containers_nil_index_set_misuse(void) {
    bool ok;
    @autoreleasepool {
        NSArray *result = [CS_AB objectsAtIndexes:cs_opaque(nil)];
        ok = result != nil && [result count] == 0;
    }
    return ok;
}
