/*
 * Scenarios_Boundaries.m — the boundary oracle of the container and string guards,
 * the survey's selectors included: every hooked index or range selector, called with the inputs
 * at and just past the edge (index == count/length, count + 1, NSNotFound, NSUIntegerMax; empty
 * ranges at the end, ranges one past it, wrapping ranges), on an empty and a three-element
 * receiver.
 *
 * A case's description is what the call returned (and the receiver afterwards, for mutations),
 * or "threw:<name>". The test runs every case without and with guards: where the original does
 * not throw, the two descriptions must be identical and nothing recorded; where it throws, the
 * guarded call must not.
 */
#import "CSScenarioSupport.h"
#include <stdio.h>
#include <string.h>

typedef enum { CS_BND_INDEX, CS_BND_RANGE } cs_bnd_kind;

typedef enum {
    CS_BND_ARRAY, CS_BND_MARRAY, CS_BND_OSET, CS_BND_MOSET, CS_BND_DATA, CS_BND_MDATA,
    CS_BND_CONSTANT_STRING, CS_BND_STRING, CS_BND_UNICODE_STRING, CS_BND_MSTRING, CS_BND_ASTRING, CS_BND_MASTRING,
} cs_bnd_receiver;

typedef NSString *(*cs_bnd_fn)(id receiver, NSUInteger index, NSRange range);

typedef struct {
    const char *name;
    cs_bnd_receiver receiver;
    cs_bnd_kind kind;
    cs_bnd_fn run;
    /* Leave out the extreme inputs (wrapping ranges; NSNotFound and NSUIntegerMax indexes): the
     * original does not check them and crashes or allocates until memory runs out (GNUstep's
     * -replaceBytesInRange:withBytes: with a wrapping range; an index set holding NSNotFound). */
    bool skip_extremes;
} cs_bnd_row;

static const char *const kReceiverNames[] = {"NSArray", "NSMutableArray", "NSOrderedSet", "NSMutableOrderedSet",
                                             "NSData", "NSMutableData", "NSString(literal)", "NSString",
                                             "NSString(unicode)", "NSMutableString", "NSAttributedString",
                                             "NSMutableAttributedString"};

/** A fresh receiver with `n` (0 or 3) elements / characters / bytes. */
static id cs_bnd_make(cs_bnd_receiver kind, NSUInteger n) {
    NSArray *items = n ? [NSArray arrayWithObjects:@"a", @"b", @"c", nil] : [NSArray array];
    NSString *text = n ? @"abc" : @"";
    NSDictionary *attributes = [NSDictionary dictionaryWithObject:@"v" forKey:@"k"];
    switch (kind) {
    case CS_BND_ARRAY: return [NSArray arrayWithArray:items];
    case CS_BND_MARRAY: return [NSMutableArray arrayWithArray:items];
    case CS_BND_OSET: return [NSOrderedSet orderedSetWithArray:items];
    case CS_BND_MOSET: return [NSMutableOrderedSet orderedSetWithArray:items];
    case CS_BND_DATA: return [NSData dataWithBytes:"abc" length:n];
    case CS_BND_MDATA: return [NSMutableData dataWithBytes:"abc" length:n];
    case CS_BND_CONSTANT_STRING: return n ? @"abc" : @"";
    case CS_BND_STRING: return [NSString stringWithFormat:@"%@", text];
    case CS_BND_UNICODE_STRING: return n ? [NSString stringWithUTF8String:"\xc3\xa9\xc3\xa8z"] : [NSString string];
    case CS_BND_MSTRING: return [NSMutableString stringWithString:text];
    case CS_BND_ASTRING: return CS_AUTORELEASE([[NSAttributedString alloc] initWithString:text attributes:attributes]);
    case CS_BND_MASTRING:
        return CS_AUTORELEASE([[NSMutableAttributedString alloc] initWithString:text attributes:attributes]);
    }
    return nil;
}

static NSString *cs_bnd_range(NSRange range) {
    return [NSString stringWithFormat:@"{%ld,%ld}", (long)range.location, (long)range.length];
}

/** A stable description: collections element by element, strings and data by content. */
static NSString *cs_bnd_text(id value) {
    if (value == nil) return @"nil";
    if ([value isKindOfClass:[NSAttributedString class]]) {
        NSAttributedString *text = value;
        NSMutableString *out = [NSMutableString stringWithFormat:@"'%@'", [text string]];
        for (NSUInteger i = 0; i < [text length];) {
            NSRange run;
            NSDictionary *attributes = [text attributesAtIndex:i effectiveRange:&run];
            [out appendFormat:@"%@%lu", cs_bnd_range(run), (unsigned long)[attributes count]];
            i = NSMaxRange(run);
        }
        return out;
    }
    if ([value isKindOfClass:[NSString class]]) return [NSString stringWithFormat:@"'%@'", value];
    if ([value isKindOfClass:[NSData class]]) return [NSString stringWithFormat:@"%lu:%@", (unsigned long)[value length], value];
    if ([value isKindOfClass:[NSOrderedSet class]]) value = [(NSOrderedSet *)value array];
    if ([value isKindOfClass:[NSArray class]]) return [NSString stringWithFormat:@"(%@)", [value componentsJoinedByString:@","]];
    if ([value isKindOfClass:[NSDictionary class]]) return [NSString stringWithFormat:@"dict%lu", (unsigned long)[value count]];
    return [value description];
}

static NSRange cs_raw(NSUInteger location, NSUInteger length) {
    NSRange range;
    range.location = location;
    range.length = length;
    return range;
}

#define R(expr) return cs_bnd_text(expr);
#define M(stmt) stmt; return cs_bnd_text(r);
#define FN(name, body) static NSString *name(id r, NSUInteger i, NSRange g) { (void)i; (void)g; body }

/* NSArray, NSOrderedSet */
FN(b_objectAtIndex, R([r objectAtIndex:i]))
FN(b_objectAtIndexedSubscript, R([r objectAtIndexedSubscript:i]))
FN(b_subarrayWithRange, R([(NSArray *)r subarrayWithRange:g]))
FN(b_objectsAtIndexes, R([r objectsAtIndexes:[NSIndexSet indexSetWithIndex:i]]))
static NSString *b_getObjects_range(id r, NSUInteger i, NSRange g) {
    (void)i;
    CS_UNRETAINED id buffer[8] = {@"-", @"-", @"-", @"-", @"-", @"-", @"-", @"-"};
    [(NSArray *)r getObjects:buffer range:g];
    return [NSString stringWithFormat:@"%@%@%@%@", buffer[0], buffer[1], buffer[2], buffer[3]];
}
/* NSMutableArray, NSMutableOrderedSet */
FN(b_insertObject_atIndex, M([r insertObject:@"x" atIndex:i]))
FN(b_removeObjectAtIndex, M([r removeObjectAtIndex:i]))
FN(b_replaceObjectAtIndex, M([r replaceObjectAtIndex:i withObject:@"x"]))
FN(b_exchange, M([r exchangeObjectAtIndex:i withObjectAtIndex:0]))
FN(b_setObject_atIndexedSubscript, M([r setObject:@"x" atIndexedSubscript:i]))
FN(b_setObject_atIndex, M([r setObject:@"x" atIndex:i]))
FN(b_removeObjectsInRange, M([r removeObjectsInRange:g]))
FN(b_insertObjects_atIndexes,
   M([r insertObjects:[NSArray arrayWithObject:@"x"] atIndexes:[NSIndexSet indexSetWithIndex:i]]))
/* NSData, NSMutableData */
FN(b_subdataWithRange, R([r subdataWithRange:g]))
static NSString *b_getBytes_range(id r, NSUInteger i, NSRange g) {
    (void)i;
    char buffer[9] = "--------";
    [(NSData *)r getBytes:buffer range:g];
    return [NSString stringWithUTF8String:buffer];
}
FN(b_replaceBytesInRange, M([r replaceBytesInRange:g withBytes:"XYZWXYZW"]))
FN(b_resetBytesInRange, M([r resetBytesInRange:g]))
/* NSString, NSMutableString */
static NSString *b_characterAtIndex(id r, NSUInteger i, NSRange g) {
    (void)g;
    return [NSString stringWithFormat:@"%u", (unsigned)[r characterAtIndex:i]];
}
FN(b_substringFromIndex, R([r substringFromIndex:i]))
FN(b_substringToIndex, R([r substringToIndex:i]))
FN(b_substringWithRange, R([r substringWithRange:g]))
FN(b_rangeOfString_range, return cs_bnd_range([r rangeOfString:@"b" options:0 range:g]);)
FN(b_rangeOfString_range_locale, return cs_bnd_range([r rangeOfString:@"b" options:0 range:g locale:nil]);)
FN(b_stringByReplacingCharactersInRange, R([r stringByReplacingCharactersInRange:g withString:@"X"]))
FN(b_insertString_atIndex, M([r insertString:@"X" atIndex:i]))
FN(b_deleteCharactersInRange, M([r deleteCharactersInRange:g]))
FN(b_replaceCharactersInRange, M([r replaceCharactersInRange:g withString:@"X"]))
/* NSAttributedString, NSMutableAttributedString */
FN(b_attributedSubstringFromRange, R([r attributedSubstringFromRange:g]))
static NSString *b_attribute_atIndex(id r, NSUInteger i, NSRange g) {
    (void)g;
    NSRange effective = NSMakeRange(7, 7);
    id value = [r attribute:@"k" atIndex:i effectiveRange:&effective];
    return [NSString stringWithFormat:@"%@ %@", cs_bnd_text(value), cs_bnd_range(effective)];
}
static NSString *b_attributesAtIndex(id r, NSUInteger i, NSRange g) {
    (void)g;
    NSRange effective = NSMakeRange(7, 7);
    id value = [r attributesAtIndex:i effectiveRange:&effective];
    return [NSString stringWithFormat:@"%@ %@", cs_bnd_text(value), cs_bnd_range(effective)];
}
FN(b_addAttribute, M([r addAttribute:@"n" value:@"w" range:g]))
FN(b_removeAttribute, M([r removeAttribute:@"k" range:g]))
FN(b_addAttributes, M([r addAttributes:[NSDictionary dictionaryWithObject:@"w" forKey:@"n"] range:g]))
FN(b_replaceObjectsInRange, M([r replaceObjectsInRange:g withObjectsFromArray:[NSArray arrayWithObject:@"x"]]))
static NSString *b_replaceObjectsInRange_source(id r, NSUInteger i, NSRange g) {
    (void)i;
    NSArray *source = [NSArray arrayWithObjects:@"x", @"y", @"z", nil];
    [r replaceObjectsInRange:NSMakeRange(0, 0) withObjectsFromArray:source range:g];
    return cs_bnd_text(r);
}
FN(b_stringByReplacingOccurrences_range,
   R([r stringByReplacingOccurrencesOfString:@"b" withString:@"X" options:0 range:g]))
FN(b_setAttributes, M([r setAttributes:[NSDictionary dictionaryWithObject:@"w" forKey:@"n"] range:g]))
#undef FN
#undef M
#undef R

static const cs_bnd_row kRows[] = {
    {"objectAtIndex:", CS_BND_ARRAY, CS_BND_INDEX, b_objectAtIndex},
    {"objectAtIndex:", CS_BND_MARRAY, CS_BND_INDEX, b_objectAtIndex},
    {"objectAtIndexedSubscript:", CS_BND_ARRAY, CS_BND_INDEX, b_objectAtIndexedSubscript},
    {"subarrayWithRange:", CS_BND_ARRAY, CS_BND_RANGE, b_subarrayWithRange},
    {"subarrayWithRange:", CS_BND_MARRAY, CS_BND_RANGE, b_subarrayWithRange},
    {"objectsAtIndexes:", CS_BND_ARRAY, CS_BND_INDEX, b_objectsAtIndexes, true},
    {"getObjects:range:", CS_BND_ARRAY, CS_BND_RANGE, b_getObjects_range},
    {"insertObject:atIndex:", CS_BND_MARRAY, CS_BND_INDEX, b_insertObject_atIndex},
    {"removeObjectAtIndex:", CS_BND_MARRAY, CS_BND_INDEX, b_removeObjectAtIndex},
    {"replaceObjectAtIndex:withObject:", CS_BND_MARRAY, CS_BND_INDEX, b_replaceObjectAtIndex},
    {"exchangeObjectAtIndex:withObjectAtIndex:", CS_BND_MARRAY, CS_BND_INDEX, b_exchange},
    {"setObject:atIndexedSubscript:", CS_BND_MARRAY, CS_BND_INDEX, b_setObject_atIndexedSubscript},
    {"removeObjectsInRange:", CS_BND_MARRAY, CS_BND_RANGE, b_removeObjectsInRange},
    {"insertObjects:atIndexes:", CS_BND_MARRAY, CS_BND_INDEX, b_insertObjects_atIndexes, true},
    {"objectAtIndex:", CS_BND_OSET, CS_BND_INDEX, b_objectAtIndex},
    {"objectAtIndexedSubscript:", CS_BND_OSET, CS_BND_INDEX, b_objectAtIndexedSubscript},
    {"insertObject:atIndex:", CS_BND_MOSET, CS_BND_INDEX, b_insertObject_atIndex},
    {"removeObjectAtIndex:", CS_BND_MOSET, CS_BND_INDEX, b_removeObjectAtIndex},
    {"replaceObjectAtIndex:withObject:", CS_BND_MOSET, CS_BND_INDEX, b_replaceObjectAtIndex},
    {"exchangeObjectAtIndex:withObjectAtIndex:", CS_BND_MOSET, CS_BND_INDEX, b_exchange},
    {"setObject:atIndex:", CS_BND_MOSET, CS_BND_INDEX, b_setObject_atIndex},
    {"setObject:atIndexedSubscript:", CS_BND_MOSET, CS_BND_INDEX, b_setObject_atIndexedSubscript},
    {"removeObjectsInRange:", CS_BND_MOSET, CS_BND_RANGE, b_removeObjectsInRange},
    {"insertObjects:atIndexes:", CS_BND_MOSET, CS_BND_INDEX, b_insertObjects_atIndexes, true},
    {"subdataWithRange:", CS_BND_DATA, CS_BND_RANGE, b_subdataWithRange},
    {"getBytes:range:", CS_BND_DATA, CS_BND_RANGE, b_getBytes_range},
    {"replaceBytesInRange:withBytes:", CS_BND_MDATA, CS_BND_RANGE, b_replaceBytesInRange, true},
    {"resetBytesInRange:", CS_BND_MDATA, CS_BND_RANGE, b_resetBytesInRange},
    {"characterAtIndex:", CS_BND_CONSTANT_STRING, CS_BND_INDEX, b_characterAtIndex},
    {"characterAtIndex:", CS_BND_STRING, CS_BND_INDEX, b_characterAtIndex},
    {"characterAtIndex:", CS_BND_UNICODE_STRING, CS_BND_INDEX, b_characterAtIndex},
    {"characterAtIndex:", CS_BND_MSTRING, CS_BND_INDEX, b_characterAtIndex},
    {"substringFromIndex:", CS_BND_CONSTANT_STRING, CS_BND_INDEX, b_substringFromIndex},
    {"substringFromIndex:", CS_BND_STRING, CS_BND_INDEX, b_substringFromIndex},
    {"substringToIndex:", CS_BND_STRING, CS_BND_INDEX, b_substringToIndex},
    {"substringToIndex:", CS_BND_MSTRING, CS_BND_INDEX, b_substringToIndex},
    {"substringWithRange:", CS_BND_CONSTANT_STRING, CS_BND_RANGE, b_substringWithRange},
    {"substringWithRange:", CS_BND_STRING, CS_BND_RANGE, b_substringWithRange},
    {"substringWithRange:", CS_BND_UNICODE_STRING, CS_BND_RANGE, b_substringWithRange},
    {"substringWithRange:", CS_BND_MSTRING, CS_BND_RANGE, b_substringWithRange},
    {"rangeOfString:options:range:", CS_BND_STRING, CS_BND_RANGE, b_rangeOfString_range},
    {"rangeOfString:options:range:locale:", CS_BND_UNICODE_STRING, CS_BND_RANGE, b_rangeOfString_range_locale},
    {"stringByReplacingCharactersInRange:withString:", CS_BND_STRING, CS_BND_RANGE, b_stringByReplacingCharactersInRange},
    {"insertString:atIndex:", CS_BND_MSTRING, CS_BND_INDEX, b_insertString_atIndex},
    {"deleteCharactersInRange:", CS_BND_MSTRING, CS_BND_RANGE, b_deleteCharactersInRange},
    {"replaceCharactersInRange:withString:", CS_BND_MSTRING, CS_BND_RANGE, b_replaceCharactersInRange},
    {"attributedSubstringFromRange:", CS_BND_ASTRING, CS_BND_RANGE, b_attributedSubstringFromRange},
    {"attribute:atIndex:effectiveRange:", CS_BND_ASTRING, CS_BND_INDEX, b_attribute_atIndex},
    {"attribute:atIndex:effectiveRange:", CS_BND_MASTRING, CS_BND_INDEX, b_attribute_atIndex},
    {"attributesAtIndex:effectiveRange:", CS_BND_ASTRING, CS_BND_INDEX, b_attributesAtIndex},
    {"attributesAtIndex:effectiveRange:", CS_BND_MASTRING, CS_BND_INDEX, b_attributesAtIndex},
    {"addAttribute:value:range:", CS_BND_MASTRING, CS_BND_RANGE, b_addAttribute},
    {"setAttributes:range:", CS_BND_MASTRING, CS_BND_RANGE, b_setAttributes},
    {"replaceCharactersInRange:withString:", CS_BND_MASTRING, CS_BND_RANGE, b_replaceCharactersInRange},
    {"deleteCharactersInRange:", CS_BND_MASTRING, CS_BND_RANGE, b_deleteCharactersInRange},
    {"removeAttribute:range:", CS_BND_MASTRING, CS_BND_RANGE, b_removeAttribute},
    {"addAttributes:range:", CS_BND_MASTRING, CS_BND_RANGE, b_addAttributes},
    {"replaceObjectsInRange:withObjectsFromArray:", CS_BND_MARRAY, CS_BND_RANGE, b_replaceObjectsInRange},
    {"replaceObjectsInRange:withObjectsFromArray:range: (source)", CS_BND_MARRAY, CS_BND_RANGE,
     b_replaceObjectsInRange_source},
    {"stringByReplacingOccurrencesOfString:withString:options:range:", CS_BND_STRING, CS_BND_RANGE,
     b_stringByReplacingOccurrences_range},
};

#define ROW_COUNT (sizeof kRows / sizeof kRows[0])
static const NSUInteger kSizes[] = {0, 3};
#define SIZE_COUNT 2
#define INDEX_VALUES 6
#define RANGE_VALUES 11
#define VALUES_PER_ROW RANGE_VALUES /* index rows use the first INDEX_VALUES */

/** The `v`-th boundary index for a receiver of `n` elements. */
static NSUInteger cs_bnd_index(NSUInteger n, unsigned v, const char **label) {
    static const char *const labels[INDEX_VALUES] = {"0", "n-1", "n", "n+1", "NSNotFound", "NSUIntegerMax"};
    *label = labels[v];
    switch (v) {
    case 0: return 0;
    case 1: return n ? n - 1 : 0;
    case 2: return n;
    case 3: return n + 1;
    case 4: return NSNotFound;
    default: return NSUIntegerMax;
    }
}

/** The `v`-th boundary range; `wrapping` is set for the ranges whose end wraps. */
static NSRange cs_bnd_range_value(NSUInteger n, unsigned v, const char **label, bool *wrapping) {
    static const char *const labels[RANGE_VALUES] = {"{0,0}", "{n,0}", "{0,n}", "{n-1,1}", "{n,1}", "{n+1,0}",
                                                     "{0,n+1}", "{NSNotFound,0}", "{NSNotFound,1}", "{1,max}",
                                                     "{max,2}"};
    *label = labels[v];
    *wrapping = v >= 9;
    switch (v) {
    case 0: return cs_raw(0, 0);
    case 1: return cs_raw(n, 0);
    case 2: return cs_raw(0, n);
    case 3: return n ? cs_raw(n - 1, 1) : cs_raw(0, 0);
    case 4: return cs_raw(n, 1);
    case 5: return cs_raw(n + 1, 0);
    case 6: return cs_raw(0, n + 1);
    case 7: return cs_raw(NSNotFound, 0);
    case 8: return cs_raw(NSNotFound, 1);
    case 9: return cs_raw(1, NSUIntegerMax);
    default: return cs_raw(NSUIntegerMax, 2);
    }
}

size_t cs_boundary_count(void) {
    return ROW_COUNT * SIZE_COUNT * VALUES_PER_ROW;
}

/** Decodes a case index; false for the padding cases (index rows have fewer values, and rows
 *  that skip wrapping ranges). */
static bool cs_bnd_decode(size_t index, const cs_bnd_row **row, NSUInteger *n, NSUInteger *value, NSRange *range,
                          const char **label) {
    if (index >= cs_boundary_count()) return false;
    *row = &kRows[index / (SIZE_COUNT * VALUES_PER_ROW)];
    *n = kSizes[(index / VALUES_PER_ROW) % SIZE_COUNT];
    unsigned v = (unsigned)(index % VALUES_PER_ROW);
    *value = 0;
    *range = cs_raw(0, 0);
    if ((*row)->kind == CS_BND_INDEX) {
        if (v >= INDEX_VALUES || (v >= 4 && (*row)->skip_extremes)) return false;
        *value = cs_bnd_index(*n, v, label);
        return true;
    }
    bool wrapping = false;
    *range = cs_bnd_range_value(*n, v, label, &wrapping);
    return !(wrapping && (*row)->skip_extremes);
}

char *cs_boundary_name(size_t index) {
    const cs_bnd_row *row;
    NSUInteger n, value;
    NSRange range;
    const char *label = "";
    if (!cs_bnd_decode(index, &row, &n, &value, &range, &label)) return NULL;
    char name[160];
    snprintf(name, sizeof name, "%s %s n=%lu %s", kReceiverNames[row->receiver], row->name, (unsigned long)n, label);
    return strdup(name);
}

char *cs_boundary_run(size_t index) {
    const cs_bnd_row *row;
    NSUInteger n, value;
    NSRange range;
    const char *label = "";
    if (!cs_bnd_decode(index, &row, &n, &value, &range, &label)) return NULL;
    char *result = NULL;
    @autoreleasepool {
        NSString *text;
        @try {
            text = row->run(cs_bnd_make(row->receiver, n), cs_opaque_index(value), range);
        } @catch (NSException *exception) {
            text = [NSString stringWithFormat:@"threw:%@", [exception name]];
        }
        result = strdup([text UTF8String]);
    }
    return result;
}
