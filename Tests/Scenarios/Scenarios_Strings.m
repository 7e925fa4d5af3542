/*
 * Scenarios_Strings.m — string misuse scenarios, legal-input oracles and the concurrency
 * stress helper for the string guard.
 *
 * Every scenario returns true only for the exact neutralised value the guard documents
 * (Guards/CSGuard_Strings.m). Without guards GNUstep either throws, or (where it tolerates the
 * misuse) returns something else or the same value: the demo's unguarded column shows which.
 * The read scenarios run on several concrete classes, because each class owns its own IMP:
 * a constant string, a formatted string, non-ASCII text, a substring and a mutable string.
 */
#import "CSScenarioSupport.h"
#include <pthread.h>

#pragma mark - Receivers of different concrete classes

static NSString *cs_utf8(const char *text) {
    return [NSString stringWithUTF8String:text];
}
/** "abc", made at run time (not a compile-time constant). */
static NSString *cs_format_string(void) {
    return [NSString stringWithFormat:@"%s", "abc"];
}
/** "héllo": five characters, one of them outside ASCII. */
static NSString *cs_unicode_string(void) {
    return [NSString stringWithUTF8String:"h\xc3\xa9llo"];
}
/** "abc" as a substring of a longer string made at run time. */
static NSString *cs_sub_string(void) {
    return [[NSString stringWithFormat:@"%s", "xabc"] substringFromIndex:1];
}
static NSMutableString *cs_mutable_string(void) {
    return [NSMutableString stringWithString:@"abc"];
}
/** "abc" with attribute k = v on {1, 2}. */
static NSMutableAttributedString *cs_attributed_string(void) {
    NSMutableAttributedString *text = [[NSMutableAttributedString alloc] initWithString:@"abc"];
    [text addAttribute:@"k" value:@"v" range:NSMakeRange(1, 2)];
    return CS_AUTORELEASE(text);
}

/** A range built field by field: GNUstep's NSMakeRange() itself raises when location + length
 *  wraps, so a wrapping range reaches a method only when code fills the struct directly. */
static NSRange cs_raw_range(NSUInteger location, NSUInteger length) {
    NSRange range;
    range.location = cs_opaque_index(location);
    range.length = cs_opaque_index(length);
    return range;
}

static BOOL cs_is_not_found(NSRange range) {
    return range.location == NSNotFound && range.length == 0;
}

#define CS_BEYOND cs_opaque_index(9)

#pragma mark - Scenarios: NSString reads

static bool string_characterAtIndex_beyond(void) {
    return [@"abc" characterAtIndex:CS_BEYOND] == 0;
}
static bool string_characterAtIndex_beyond_format(void) {
    return [cs_format_string() characterAtIndex:CS_BEYOND] == 0;
}
static bool string_characterAtIndex_beyond_unicode(void) {
    return [cs_unicode_string() characterAtIndex:CS_BEYOND] == 0;
}
static bool string_characterAtIndex_beyond_substring(void) {
    return [cs_sub_string() characterAtIndex:CS_BEYOND] == 0;
}
static bool mstring_characterAtIndex_beyond(void) {
    return [cs_mutable_string() characterAtIndex:CS_BEYOND] == 0;
}

static bool string_substringFromIndex_beyond(void) {
    NSString *result = [@"abc" substringFromIndex:CS_BEYOND];
    return result != nil && [result length] == 0;
}
static bool string_substringToIndex_beyond(void) {
    return [[@"abc" substringToIndex:CS_BEYOND] isEqualToString:@"abc"];
}

static bool string_substringWithRange_beyond(void) {
    return [[@"abc" substringWithRange:NSMakeRange(1, CS_BEYOND)] isEqualToString:@"bc"];
}
static bool string_substringWithRange_beyond_format(void) {
    return [[cs_format_string() substringWithRange:NSMakeRange(1, CS_BEYOND)] isEqualToString:@"bc"];
}
static bool string_substringWithRange_beyond_unicode(void) {
    NSString *expected = [NSString stringWithUTF8String:"\xc3\xa9llo"];
    return [[cs_unicode_string() substringWithRange:NSMakeRange(1, CS_BEYOND)] isEqualToString:expected];
}
static bool string_substringWithRange_beyond_substring(void) {
    return [[cs_sub_string() substringWithRange:NSMakeRange(1, CS_BEYOND)] isEqualToString:@"bc"];
}
static bool mstring_substringWithRange_beyond(void) {
    return [[cs_mutable_string() substringWithRange:NSMakeRange(1, CS_BEYOND)] isEqualToString:@"bc"];
}
/** location + length wraps around to 1: must never look like the legal range {0, 1}. */
static bool string_substringWithRange_wrap(void) {
    NSString *result = [@"abc" substringWithRange:cs_raw_range(NSUIntegerMax, 2)];
    return result != nil && [result length] == 0;
}

#pragma mark - Scenarios: NSString searches

static bool string_rangeOfString_nil(void) {
    return cs_is_not_found([@"abc" rangeOfString:cs_opaque(nil)]);
}
static bool string_rangeOfStringOptions_nil(void) {
    return cs_is_not_found([@"abc" rangeOfString:cs_opaque(nil) options:NSCaseInsensitiveSearch]);
}
static bool string_rangeOfStringOptionsRange_nil(void) {
    return cs_is_not_found([@"abc" rangeOfString:cs_opaque(nil) options:0 range:NSMakeRange(0, 3)]);
}
/** Only the valid part {4, 2} ("bc") is searched, from the back. */
static bool string_rangeOfStringOptionsRange_beyond(void) {
    NSRange found = [@"abcabc" rangeOfString:@"c" options:NSBackwardsSearch range:NSMakeRange(4, CS_BEYOND)];
    return found.location == 5 && found.length == 1;
}
static bool string_rangeOfStringOptionsRangeLocale_beyond(void) {
    NSRange found = [@"abcabc" rangeOfString:@"a" options:0 range:NSMakeRange(2, CS_BEYOND) locale:nil];
    return found.location == 3 && found.length == 1;
}
static bool string_hasPrefix_nil(void) {
    return [@"abc" hasPrefix:cs_opaque(nil)] == NO;
}
static bool string_hasSuffix_nil(void) {
    return [@"abc" hasSuffix:cs_opaque(nil)] == NO;
}

#pragma mark - Scenarios: derived strings and initialisers

static bool string_stringByReplacingCharactersInRange_beyond(void) {
    NSString *result = [@"abc" stringByReplacingCharactersInRange:NSMakeRange(2, CS_BEYOND) withString:@"x"];
    return [result isEqualToString:@"abc"];
}
static bool string_stringByReplacingCharactersInRange_nil(void) {
    NSString *result = [@"abc" stringByReplacingCharactersInRange:NSMakeRange(0, 1) withString:cs_opaque(nil)];
    return [result isEqualToString:@"abc"];
}
static bool string_stringByAppendingString_nil(void) {
    return [[cs_format_string() stringByAppendingString:cs_opaque(nil)] isEqualToString:@"abc"];
}
static bool string_initWithString_nil(void) {
    NSString *result = [[NSString alloc] initWithString:cs_opaque(nil)];
    bool ok = result != nil && [result length] == 0;
    CS_RELEASE(result);
    return ok;
}
/** The empty result is still a working mutable string. */
static bool mstring_initWithString_nil(void) {
    NSMutableString *result = [[NSMutableString alloc] initWithString:cs_opaque(nil)];
    bool ok = result != nil && [result length] == 0;
    [result appendString:@"x"];
    ok = ok && [result isEqualToString:@"x"];
    CS_RELEASE(result);
    return ok;
}
static bool string_stringWithString_nil(void) {
    NSString *result = [NSString stringWithString:cs_opaque(nil)];
    return result != nil && [result length] == 0;
}
static bool mstring_stringWithString_nil(void) {
    NSMutableString *result = [NSMutableString stringWithString:cs_opaque(nil)];
    bool ok = result != nil && [result length] == 0;
    [result appendString:@"x"];
    return ok && [result isEqualToString:@"x"];
}

#pragma mark - Scenarios: NSMutableString

static bool mstring_appendString_nil(void) {
    NSMutableString *text = cs_mutable_string();
    [text appendString:cs_opaque(nil)];
    return [text isEqualToString:@"abc"];
}
static bool mstring_insertString_beyond(void) {
    NSMutableString *text = cs_mutable_string();
    [text insertString:@"x" atIndex:CS_BEYOND];
    return [text isEqualToString:@"abc"];
}
static bool mstring_insertString_nil(void) {
    NSMutableString *text = cs_mutable_string();
    [text insertString:cs_opaque(nil) atIndex:1];
    return [text isEqualToString:@"abc"];
}
static bool mstring_deleteCharactersInRange_beyond(void) {
    NSMutableString *text = cs_mutable_string();
    [text deleteCharactersInRange:NSMakeRange(2, CS_BEYOND)];
    return [text isEqualToString:@"abc"];
}
/** The mutable string view of an attributed string: another class, NSMutableString's own IMP. */
static bool mstring_deleteCharactersInRange_beyond_tracker(void) {
    NSMutableAttributedString *owner = cs_attributed_string();
    [[owner mutableString] deleteCharactersInRange:NSMakeRange(2, CS_BEYOND)];
    return [[owner string] isEqualToString:@"abc"];
}
static bool mstring_replaceCharactersInRange_beyond(void) {
    NSMutableString *text = cs_mutable_string();
    [text replaceCharactersInRange:NSMakeRange(CS_BEYOND, 1) withString:@"x"];
    return [text isEqualToString:@"abc"];
}
static bool mstring_replaceCharactersInRange_nil(void) {
    NSMutableString *text = cs_mutable_string();
    [text replaceCharactersInRange:NSMakeRange(0, 1) withString:cs_opaque(nil)];
    return [text isEqualToString:@"abc"];
}

#pragma mark - Scenarios: NSAttributedString

static bool astring_initWithString_nil(void) {
    NSAttributedString *result = [[NSAttributedString alloc] initWithString:cs_opaque(nil)];
    bool ok = result != nil && [result length] == 0;
    CS_RELEASE(result);
    return ok;
}
static bool astring_initWithStringAttributes_nil(void) {
    NSDictionary *attributes = [NSDictionary dictionaryWithObject:@"v" forKey:@"k"];
    NSAttributedString *result = [[NSAttributedString alloc] initWithString:cs_opaque(nil) attributes:attributes];
    bool ok = result != nil && [result length] == 0;
    CS_RELEASE(result);
    return ok;
}
static bool mastring_initWithString_nil(void) {
    NSMutableAttributedString *result = [[NSMutableAttributedString alloc] initWithString:cs_opaque(nil)];
    bool ok = result != nil && [result length] == 0;
    [[result mutableString] appendString:@"x"];
    ok = ok && [[result string] isEqualToString:@"x"];
    CS_RELEASE(result);
    return ok;
}
static bool astring_attributedSubstringFromRange_beyond(void) {
    NSAttributedString *part = [cs_attributed_string() attributedSubstringFromRange:NSMakeRange(1, CS_BEYOND)];
    return [[part string] isEqualToString:@"bc"] &&
           [[part attribute:@"k" atIndex:0 effectiveRange:NULL] isEqualToString:@"v"];
}
static bool astring_attributeAtIndex_beyond(void) {
    NSRange effective = NSMakeRange(7, 7);
    id value = [cs_attributed_string() attribute:@"k" atIndex:CS_BEYOND effectiveRange:&effective];
    return value == nil && cs_is_not_found(effective);
}
static bool astring_attributesAtIndex_beyond(void) {
    NSRange effective = NSMakeRange(7, 7);
    NSDictionary *attributes = [cs_attributed_string() attributesAtIndex:CS_BEYOND effectiveRange:&effective];
    return attributes != nil && [attributes count] == 0 && cs_is_not_found(effective);
}
#if defined(__APPLE__)
/** Index 0 of an empty attributed string (index == length): a frequent crash on Apple, which
 *  throws there. GNUstep answers it (legal there: no scenario). */
static bool astring_attributesAtIndex_empty(void) {
    NSAttributedString *empty = [[NSAttributedString alloc] initWithString:@""];
    NSRange effective = NSMakeRange(7, 7);
    NSDictionary *attributes = [empty attributesAtIndex:cs_opaque_index(0) effectiveRange:&effective];
    bool ok = attributes != nil && [attributes count] == 0 && cs_is_not_found(effective);
    CS_RELEASE(empty);
    return ok;
}
#endif

#pragma mark - Scenarios: NSMutableAttributedString

static bool cs_attributes_unchanged(NSMutableAttributedString *text) {
    return [[text string] isEqualToString:@"abc"] && [text attribute:@"k" atIndex:0 effectiveRange:NULL] == nil &&
           [[text attribute:@"k" atIndex:1 effectiveRange:NULL] isEqualToString:@"v"] &&
           [[text attribute:@"k" atIndex:2 effectiveRange:NULL] isEqualToString:@"v"] &&
           [[text attributesAtIndex:1 effectiveRange:NULL] count] == 1;
}
static bool mastring_addAttribute_beyond(void) {
    NSMutableAttributedString *text = cs_attributed_string();
    [text addAttribute:@"other" value:@"w" range:NSMakeRange(0, CS_BEYOND)];
    return cs_attributes_unchanged(text);
}
static bool mastring_addAttribute_nilValue(void) {
    NSMutableAttributedString *text = cs_attributed_string();
    [text addAttribute:@"other" value:cs_opaque(nil) range:NSMakeRange(0, 1)];
    return cs_attributes_unchanged(text);
}
static bool mastring_addAttribute_nilName(void) {
    NSMutableAttributedString *text = cs_attributed_string();
    [text addAttribute:cs_opaque(nil) value:@"w" range:NSMakeRange(0, 1)];
    return cs_attributes_unchanged(text);
}
static bool mastring_setAttributes_beyond(void) {
    NSMutableAttributedString *text = cs_attributed_string();
    [text setAttributes:nil range:NSMakeRange(1, CS_BEYOND)];
    return cs_attributes_unchanged(text);
}
static bool mastring_replaceCharactersInRange_beyond(void) {
    NSMutableAttributedString *text = cs_attributed_string();
    [text replaceCharactersInRange:NSMakeRange(2, CS_BEYOND) withString:@"x"];
    return cs_attributes_unchanged(text);
}
static bool mastring_replaceCharactersInRange_nil(void) {
    NSMutableAttributedString *text = cs_attributed_string();
    [text replaceCharactersInRange:NSMakeRange(0, 1) withString:cs_opaque(nil)];
    return cs_attributes_unchanged(text);
}
static bool mastring_deleteCharactersInRange_beyond(void) {
    NSMutableAttributedString *text = cs_attributed_string();
    [text deleteCharactersInRange:NSMakeRange(1, CS_BEYOND)];
    return cs_attributes_unchanged(text);
}

#pragma mark - Scenarios: wrapping ranges (location + length overflows to a small number)

static bool string_rangeOfStringOptionsRange_wrap(void) {
    /* {2, max} ends at 1 after wrapping; only its valid part {2, 4} ("cabc") is searched. */
    NSRange found = [@"abcabc" rangeOfString:@"c" options:NSBackwardsSearch range:cs_raw_range(2, NSUIntegerMax)];
    return found.location == 5 && found.length == 1;
}
static bool string_stringByReplacingCharactersInRange_wrap(void) {
    NSString *result = [@"abc" stringByReplacingCharactersInRange:cs_raw_range(NSUIntegerMax - 1, 3) withString:@"x"];
    return [result isEqualToString:@"abc"];
}
static bool mstring_deleteCharactersInRange_wrap(void) {
    NSMutableString *text = cs_mutable_string();
    [text deleteCharactersInRange:cs_raw_range(1, NSUIntegerMax)];
    return [text isEqualToString:@"abc"];
}
static bool mstring_replaceCharactersInRange_wrap(void) {
    NSMutableString *text = cs_mutable_string();
    [text replaceCharactersInRange:cs_raw_range(NSUIntegerMax, 2) withString:@"x"];
    return [text isEqualToString:@"abc"];
}
static bool astring_attributedSubstringFromRange_wrap(void) {
    NSAttributedString *part = [cs_attributed_string() attributedSubstringFromRange:cs_raw_range(1, NSUIntegerMax)];
    return [[part string] isEqualToString:@"bc"];
}
static bool mastring_setAttributes_wrap(void) {
    NSMutableAttributedString *text = cs_attributed_string();
    [text setAttributes:nil range:cs_raw_range(NSUIntegerMax - 1, 3)];
    return cs_attributes_unchanged(text);
}

/* Misuses found by the selector survey (scripts/survey-cluster-selectors.m). */
static bool string_stringByReplacingOccurrences_nilTarget(void) {
    return [[cs_format_string() stringByReplacingOccurrencesOfString:cs_opaque(nil) withString:@"x"] isEqualToString:@"abc"];
}
static bool string_stringByReplacingOccurrences_nilReplacement(void) {
    return [[cs_mutable_string() stringByReplacingOccurrencesOfString:@"b" withString:cs_opaque(nil)] isEqualToString:@"abc"];
}
static bool string_stringByReplacingOccurrencesOptionsRange_beyond(void) {
    NSString *result = [cs_format_string() stringByReplacingOccurrencesOfString:@"b" withString:@"x" options:0
                                                                          range:NSMakeRange(1, CS_BEYOND)];
    return [result isEqualToString:@"abc"];
}
static bool string_compare_nil(void) {
    return [cs_format_string() compare:cs_opaque(nil)] == NSOrderedDescending;
}
static bool string_containsString_nil(void) {
    return [@"abc" containsString:cs_opaque(nil)] == NO;
}
static bool string_componentsSeparatedByString_nil(void) {
    NSArray *parts = [cs_format_string() componentsSeparatedByString:cs_opaque(nil)];
    return [parts count] == 1 && [[parts objectAtIndex:0] isEqualToString:@"abc"];
}
static bool mastring_removeAttribute_beyond(void) {
    NSMutableAttributedString *text = cs_attributed_string();
    [text removeAttribute:@"k" range:NSMakeRange(2, CS_BEYOND)];
    return [[text attribute:@"k" atIndex:2 effectiveRange:NULL] isEqualToString:@"v"];
}
static bool mastring_addAttributes_nil(void) {
    NSMutableAttributedString *text = cs_attributed_string();
    [text addAttributes:cs_opaque(nil) range:NSMakeRange(0, 1)];
    return [[text attributesAtIndex:0 effectiveRange:NULL] count] == 0;
}
static bool mastring_addAttributes_beyond(void) {
    NSMutableAttributedString *text = cs_attributed_string();
    [text addAttributes:[NSDictionary dictionaryWithObject:@"w" forKey:@"n"] range:NSMakeRange(1, CS_BEYOND)];
    return [text attribute:@"n" atIndex:1 effectiveRange:NULL] == nil;
}

#define S(name, selector, fn) {name, "string", selector, false, fn}

static const cs_scenario kScenarios[] = {
    S("string.characterAtIndex.beyond", "characterAtIndex:", string_characterAtIndex_beyond),
    S("string.characterAtIndex.beyond.format", "characterAtIndex:", string_characterAtIndex_beyond_format),
    S("string.characterAtIndex.beyond.unicode", "characterAtIndex:", string_characterAtIndex_beyond_unicode),
    S("string.characterAtIndex.beyond.substring", "characterAtIndex:", string_characterAtIndex_beyond_substring),
    S("mstring.characterAtIndex.beyond", "characterAtIndex:", mstring_characterAtIndex_beyond),
    S("string.substringFromIndex.beyond", "substringFromIndex:", string_substringFromIndex_beyond),
    S("string.substringToIndex.beyond", "substringToIndex:", string_substringToIndex_beyond),
    S("string.substringWithRange.beyond", "substringWithRange:", string_substringWithRange_beyond),
    S("string.substringWithRange.beyond.format", "substringWithRange:", string_substringWithRange_beyond_format),
    S("string.substringWithRange.beyond.unicode", "substringWithRange:", string_substringWithRange_beyond_unicode),
    S("string.substringWithRange.beyond.substring", "substringWithRange:", string_substringWithRange_beyond_substring),
    S("mstring.substringWithRange.beyond", "substringWithRange:", mstring_substringWithRange_beyond),
    S("string.substringWithRange.wrap", "substringWithRange:", string_substringWithRange_wrap),
    S("string.rangeOfString.nil", "rangeOfString:", string_rangeOfString_nil),
    S("string.rangeOfStringOptions.nil", "rangeOfString:options:", string_rangeOfStringOptions_nil),
    S("string.rangeOfStringOptionsRange.nil", "rangeOfString:options:range:", string_rangeOfStringOptionsRange_nil),
    S("string.rangeOfStringOptionsRange.beyond", "rangeOfString:options:range:",
      string_rangeOfStringOptionsRange_beyond),
    S("string.rangeOfStringOptionsRangeLocale.beyond", "rangeOfString:options:range:locale:",
      string_rangeOfStringOptionsRangeLocale_beyond),
    S("string.hasPrefix.nil", "hasPrefix:", string_hasPrefix_nil),
    S("string.hasSuffix.nil", "hasSuffix:", string_hasSuffix_nil),
    S("string.stringByReplacingCharactersInRange.beyond", "stringByReplacingCharactersInRange:withString:",
      string_stringByReplacingCharactersInRange_beyond),
#if defined(__APPLE__) /* a nil string in an edit is legal on GNUstep: see CS_NIL_EDIT_STRING_IS_MISUSE */
    S("string.stringByReplacingCharactersInRange.nil", "stringByReplacingCharactersInRange:withString:",
      string_stringByReplacingCharactersInRange_nil),
#endif
#if defined(__APPLE__) /* a nil string in an edit is legal on GNUstep: see CS_NIL_EDIT_STRING_IS_MISUSE */
    S("string.stringByAppendingString.nil", "stringByAppendingString:", string_stringByAppendingString_nil),
#endif
    S("string.initWithString.nil", "initWithString:", string_initWithString_nil),
    S("mstring.initWithString.nil", "initWithString:", mstring_initWithString_nil),
    {"string.stringWithString.nil", "string", "stringWithString:", true, string_stringWithString_nil},
    {"mstring.stringWithString.nil", "string", "stringWithString:", true, mstring_stringWithString_nil},
#if defined(__APPLE__) /* a nil string in an edit is legal on GNUstep: see CS_NIL_EDIT_STRING_IS_MISUSE */
    S("mstring.appendString.nil", "appendString:", mstring_appendString_nil),
#endif
    S("mstring.insertString.beyond", "insertString:atIndex:", mstring_insertString_beyond),
#if defined(__APPLE__) /* a nil string in an edit is legal on GNUstep: see CS_NIL_EDIT_STRING_IS_MISUSE */
    S("mstring.insertString.nil", "insertString:atIndex:", mstring_insertString_nil),
#endif
    S("mstring.deleteCharactersInRange.beyond", "deleteCharactersInRange:", mstring_deleteCharactersInRange_beyond),
    S("mstring.deleteCharactersInRange.beyond.tracker", "deleteCharactersInRange:",
      mstring_deleteCharactersInRange_beyond_tracker),
    S("mstring.replaceCharactersInRange.beyond", "replaceCharactersInRange:withString:",
      mstring_replaceCharactersInRange_beyond),
#if defined(__APPLE__) /* a nil string in an edit is legal on GNUstep: see CS_NIL_EDIT_STRING_IS_MISUSE */
    S("mstring.replaceCharactersInRange.nil", "replaceCharactersInRange:withString:",
      mstring_replaceCharactersInRange_nil),
#endif
    S("astring.initWithString.nil", "initWithString:", astring_initWithString_nil),
    S("astring.initWithStringAttributes.nil", "initWithString:attributes:", astring_initWithStringAttributes_nil),
    S("mastring.initWithString.nil", "initWithString:", mastring_initWithString_nil),
    S("astring.attributedSubstringFromRange.beyond", "attributedSubstringFromRange:",
      astring_attributedSubstringFromRange_beyond),
    S("astring.attributeAtIndex.beyond", "attribute:atIndex:effectiveRange:", astring_attributeAtIndex_beyond),
    S("astring.attributesAtIndex.beyond", "attributesAtIndex:effectiveRange:", astring_attributesAtIndex_beyond),
#if defined(__APPLE__)
    S("astring.attributesAtIndex.empty", "attributesAtIndex:effectiveRange:", astring_attributesAtIndex_empty),
#endif
    S("mastring.addAttribute.beyond", "addAttribute:value:range:", mastring_addAttribute_beyond),
    S("mastring.addAttribute.nilValue", "addAttribute:value:range:", mastring_addAttribute_nilValue),
    S("mastring.addAttribute.nilName", "addAttribute:value:range:", mastring_addAttribute_nilName),
    S("mastring.setAttributes.beyond", "setAttributes:range:", mastring_setAttributes_beyond),
    S("mastring.replaceCharactersInRange.beyond", "replaceCharactersInRange:withString:",
      mastring_replaceCharactersInRange_beyond),
#if defined(__APPLE__) /* a nil string in an edit is legal on GNUstep: see CS_NIL_EDIT_STRING_IS_MISUSE */
    S("mastring.replaceCharactersInRange.nil", "replaceCharactersInRange:withString:",
      mastring_replaceCharactersInRange_nil),
#endif
    S("mastring.deleteCharactersInRange.beyond", "deleteCharactersInRange:", mastring_deleteCharactersInRange_beyond),
    S("string.stringByReplacingOccurrences.nilTarget", "stringByReplacingOccurrencesOfString:withString:",
      string_stringByReplacingOccurrences_nilTarget),
    S("string.stringByReplacingOccurrences.nilReplacement", "stringByReplacingOccurrencesOfString:withString:",
      string_stringByReplacingOccurrences_nilReplacement),
    S("string.stringByReplacingOccurrencesOptionsRange.beyond",
      "stringByReplacingOccurrencesOfString:withString:options:range:",
      string_stringByReplacingOccurrencesOptionsRange_beyond),
    S("string.compare.nil", "compare:", string_compare_nil),
    S("string.containsString.nil", "containsString:", string_containsString_nil),
    S("string.componentsSeparatedByString.nil", "componentsSeparatedByString:", string_componentsSeparatedByString_nil),
    S("mastring.removeAttribute.beyond", "removeAttribute:range:", mastring_removeAttribute_beyond),
    S("mastring.addAttributes.nil", "addAttributes:range:", mastring_addAttributes_nil),
    S("mastring.addAttributes.beyond", "addAttributes:range:", mastring_addAttributes_beyond),
    S("string.rangeOfStringOptionsRange.wrap", "rangeOfString:options:range:", string_rangeOfStringOptionsRange_wrap),
    S("string.stringByReplacingCharactersInRange.wrap", "stringByReplacingCharactersInRange:withString:",
      string_stringByReplacingCharactersInRange_wrap),
    S("mstring.deleteCharactersInRange.wrap", "deleteCharactersInRange:", mstring_deleteCharactersInRange_wrap),
    S("mstring.replaceCharactersInRange.wrap", "replaceCharactersInRange:withString:",
      mstring_replaceCharactersInRange_wrap),
    S("astring.attributedSubstringFromRange.wrap", "attributedSubstringFromRange:",
      astring_attributedSubstringFromRange_wrap),
    S("mastring.setAttributes.wrap", "setAttributes:range:", mastring_setAttributes_wrap),
};
const cs_scenario_table cs_string_scenarios = CS_TABLE(kScenarios);

#pragma mark - Oracle helpers

static NSString *cs_range_text(NSRange range) {
    if (range.location == NSNotFound) return [NSString stringWithFormat:@"{NotFound,%lu}", (unsigned long)range.length];
    return [NSString stringWithFormat:@"{%lu,%lu}", (unsigned long)range.location, (unsigned long)range.length];
}

/** Attributes with sorted keys (dictionary order is not part of the contract). */
static NSString *cs_attributes_text(NSDictionary *attributes) {
    if (attributes == nil) return @"nil";
    NSMutableString *out = [NSMutableString stringWithString:@"["];
    NSArray *keys = [[attributes allKeys] sortedArrayUsingSelector:@selector(compare:)];
    for (NSString *key in keys) [out appendFormat:@"%@=%@;", key, [attributes objectForKey:key]];
    [out appendString:@"]"];
    return out;
}

/** The characters and every attribute run of an attributed string. */
static NSString *cs_attributed_text(NSAttributedString *text) {
    if (text == nil) return @"nil";
    NSMutableString *out = [NSMutableString stringWithFormat:@"'%@'", [text string]];
    NSUInteger index = 0, length = [text length];
    while (index < length) {
        NSRange run;
        NSDictionary *attributes = [text attributesAtIndex:index effectiveRange:&run];
        [out appendFormat:@" %@%@", cs_range_text(run), cs_attributes_text(attributes)];
        index = NSMaxRange(run);
    }
    return out;
}

/** One receiver of every concrete string class the read oracles cover (including ""). */
static NSArray *cs_oracle_strings(void) {
    NSMutableAttributedString *attributed = cs_attributed_string();
    return [NSArray arrayWithObjects:@"abc", @"", [NSString string], cs_format_string(), cs_unicode_string(),
                                     cs_sub_string(), cs_mutable_string(), [NSMutableString string],
                                     [attributed mutableString], [NSString stringWithUTF8String:"\xe2\x82\xac"],
                                     [[NSString stringWithUTF8String:"x\xc3\xa9t\xc3\xa9"] substringFromIndex:1],
                                     nil];
}

#pragma mark - Oracles: NSString reads

static void *oracle_string_characterAtIndex(void) {
    NSMutableString *out = [NSMutableString string];
    for (NSString *s in cs_oracle_strings()) {
        for (NSUInteger i = 0; i < [s length]; i++) [out appendFormat:@"%u ", (unsigned)[s characterAtIndex:i]];
        [out appendString:@"| "];
    }
    return cs_autoreleased_pointer(out);
}

static void *oracle_string_substringFromIndex(void) {
    NSMutableString *out = [NSMutableString string];
    for (NSString *s in cs_oracle_strings()) {
        NSUInteger length = [s length];
        [out appendFormat:@"%@ %@ ", cs_describe([s substringFromIndex:0]), cs_describe([s substringFromIndex:length])];
        if (length > 0) [out appendFormat:@"%@ ", cs_describe([s substringFromIndex:length - 1])];
        [out appendString:@"| "];
    }
    return cs_autoreleased_pointer(out);
}

static void *oracle_string_substringToIndex(void) {
    NSMutableString *out = [NSMutableString string];
    for (NSString *s in cs_oracle_strings()) {
        NSUInteger length = [s length];
        [out appendFormat:@"%@ %@ ", cs_describe([s substringToIndex:0]), cs_describe([s substringToIndex:length])];
        if (length > 0) [out appendFormat:@"%@ ", cs_describe([s substringToIndex:length - 1])];
        [out appendString:@"| "];
    }
    return cs_autoreleased_pointer(out);
}

static void *oracle_string_substringWithRange(void) {
    NSMutableString *out = [NSMutableString string];
    for (NSString *s in cs_oracle_strings()) {
        NSUInteger length = [s length];
        [out appendFormat:@"%@ %@ %@ ", cs_describe([s substringWithRange:NSMakeRange(0, 0)]),
                          cs_describe([s substringWithRange:NSMakeRange(length, 0)]),
                          cs_describe([s substringWithRange:NSMakeRange(0, length)])];
        if (length > 1) [out appendFormat:@"%@ ", cs_describe([s substringWithRange:NSMakeRange(1, length - 1)])];
        if (length > 0) [out appendFormat:@"%@ ", cs_describe([s substringWithRange:NSMakeRange(length - 1, 1)])];
        [out appendString:@"| "];
    }
    return cs_autoreleased_pointer(out);
}

#pragma mark - Oracles: NSString searches

/* The oracles' local C arrays of strings are strong under ARC on purpose: their elements include
 * autoreleased call results, which ARC may take back from the pool when stored into an unretained
 * slot; strong slots keep them for the array's scope, as the pool does under MRC. */

static void *oracle_string_rangeOfString(void) {
    NSMutableString *out = [NSMutableString string];
    NSString *needles[] = {@"a", @"c", @"bc", @"abcd", @"z", @"", @"l", cs_utf8("\xc3\xa9")};
    for (NSString *s in cs_oracle_strings()) {
        for (size_t n = 0; n < sizeof needles / sizeof needles[0]; n++)
            [out appendFormat:@"%@ ", cs_range_text([s rangeOfString:needles[n]])];
        [out appendString:@"| "];
    }
    return cs_autoreleased_pointer(out);
}

static const NSUInteger kSearchOptions[] = {
    0, NSCaseInsensitiveSearch, NSBackwardsSearch, NSAnchoredSearch, NSAnchoredSearch | NSBackwardsSearch,
    NSLiteralSearch, NSCaseInsensitiveSearch | NSBackwardsSearch,
};

static void *oracle_string_rangeOfStringOptions(void) {
    NSMutableString *out = [NSMutableString string];
    NSString *haystacks[] = {@"abcABCabc", @"", cs_unicode_string(), cs_mutable_string()};
    NSString *needles[] = {@"a", @"B", @"bc", @"C", @"z", cs_utf8("\xc3\x89")};
    for (size_t h = 0; h < sizeof haystacks / sizeof haystacks[0]; h++) {
        for (size_t o = 0; o < sizeof kSearchOptions / sizeof kSearchOptions[0]; o++)
            for (size_t n = 0; n < sizeof needles / sizeof needles[0]; n++)
                [out appendFormat:@"%@ ", cs_range_text([haystacks[h] rangeOfString:needles[n] options:kSearchOptions[o]])];
        [out appendString:@"| "];
    }
    return cs_autoreleased_pointer(out);
}

/** Ranges that are legal for a string of `length`: empty at both ends, whole, inner parts. */
static NSUInteger cs_legal_ranges(NSUInteger length, NSRange *out) {
    NSUInteger count = 0;
    out[count++] = NSMakeRange(0, 0);
    out[count++] = NSMakeRange(length, 0);
    out[count++] = NSMakeRange(0, length);
    if (length > 2) {
        out[count++] = NSMakeRange(1, length - 2);
        out[count++] = NSMakeRange(1, length - 1);
        out[count++] = NSMakeRange(length - 1, 1);
    }
    return count;
}

static void *oracle_string_rangeOfStringOptionsRange(void) {
    NSMutableString *out = [NSMutableString string];
    NSString *haystacks[] = {@"abcABCabc", @"", cs_unicode_string(), cs_sub_string()};
    NSString *needles[] = {@"a", @"bc", @"C", @"z", @"l"};
    for (size_t h = 0; h < sizeof haystacks / sizeof haystacks[0]; h++) {
        NSRange ranges[8];
        NSUInteger count = cs_legal_ranges([haystacks[h] length], ranges);
        for (NSUInteger r = 0; r < count; r++)
            for (size_t o = 0; o < sizeof kSearchOptions / sizeof kSearchOptions[0]; o++)
                for (size_t n = 0; n < sizeof needles / sizeof needles[0]; n++)
                    [out appendFormat:@"%@ ", cs_range_text([haystacks[h] rangeOfString:needles[n]
                                                                               options:kSearchOptions[o]
                                                                                 range:ranges[r]])];
        [out appendString:@"| "];
    }
    return cs_autoreleased_pointer(out);
}

static void *oracle_string_rangeOfStringOptionsRangeLocale(void) {
    NSMutableString *out = [NSMutableString string];
    NSString *haystacks[] = {@"abcABCabc", @"", cs_unicode_string()};
    NSString *needles[] = {@"a", @"C", @"z"};
    for (size_t h = 0; h < sizeof haystacks / sizeof haystacks[0]; h++) {
        NSRange ranges[8];
        NSUInteger count = cs_legal_ranges([haystacks[h] length], ranges);
        for (NSUInteger r = 0; r < count; r++)
            for (size_t o = 0; o < sizeof kSearchOptions / sizeof kSearchOptions[0]; o++)
                for (size_t n = 0; n < sizeof needles / sizeof needles[0]; n++)
                    [out appendFormat:@"%@ ", cs_range_text([haystacks[h] rangeOfString:needles[n]
                                                                               options:kSearchOptions[o]
                                                                                 range:ranges[r]
                                                                                locale:nil])];
        [out appendString:@"| "];
    }
    return cs_autoreleased_pointer(out);
}

static void *oracle_string_hasPrefixSuffix(bool suffix) {
    NSMutableString *out = [NSMutableString string];
    NSString *affixes[] = {@"", @"a", @"abc", @"abcd", @"c", @"h", @"lo", cs_utf8("\xc3\xa9")};
    for (NSString *s in cs_oracle_strings()) {
        for (size_t a = 0; a < sizeof affixes / sizeof affixes[0]; a++)
            [out appendFormat:@"%d", suffix ? (int)[s hasSuffix:affixes[a]] : (int)[s hasPrefix:affixes[a]]];
        [out appendString:@" "];
    }
    return cs_autoreleased_pointer(out);
}
static void *oracle_string_hasPrefix(void) {
    return oracle_string_hasPrefixSuffix(false);
}
static void *oracle_string_hasSuffix(void) {
    return oracle_string_hasPrefixSuffix(true);
}

#pragma mark - Oracles: derived strings and initialisers

static void *oracle_string_stringByReplacingCharactersInRange(void) {
    NSMutableString *out = [NSMutableString string];
    NSString *replacements[] = {@"", @"XY", cs_utf8("\xc3\xa9")};
    for (NSString *s in cs_oracle_strings()) {
        NSRange ranges[8];
        NSUInteger count = cs_legal_ranges([s length], ranges);
        for (NSUInteger r = 0; r < count; r++)
            for (size_t x = 0; x < sizeof replacements / sizeof replacements[0]; x++)
                [out appendFormat:@"%@ ", [s stringByReplacingCharactersInRange:ranges[r] withString:replacements[x]]];
        [out appendString:@"| "];
    }
    return cs_autoreleased_pointer(out);
}

static void *oracle_string_stringByAppendingString(void) {
    NSMutableString *out = [NSMutableString string];
    for (NSString *s in cs_oracle_strings())
        [out appendFormat:@"%@ %@ %@ | ", [s stringByAppendingString:@""], [s stringByAppendingString:@"+z"],
                          [s stringByAppendingString:cs_unicode_string()]];
    return cs_autoreleased_pointer(out);
}

static void *oracle_string_initWithString(void) {
    NSMutableString *out = [NSMutableString string];
    for (NSString *s in cs_oracle_strings()) {
        NSString *copy = [[NSString alloc] initWithString:s];
        NSMutableString *mutableCopy = [[NSMutableString alloc] initWithString:s];
        [mutableCopy appendString:@"!"];
        [out appendFormat:@"%@ %@ | ", cs_describe(copy), cs_describe(mutableCopy)];
        CS_RELEASE(copy);
        CS_RELEASE(mutableCopy);
    }
    return cs_autoreleased_pointer(out);
}

static void *oracle_string_stringWithString(void) {
    NSMutableString *out = [NSMutableString string];
    for (NSString *s in cs_oracle_strings()) {
        NSMutableString *mutableCopy = [NSMutableString stringWithString:s];
        [mutableCopy appendString:@"!"];
        [out appendFormat:@"%@ %@ | ", cs_describe([NSString stringWithString:s]), cs_describe(mutableCopy)];
    }
    return cs_autoreleased_pointer(out);
}

#pragma mark - Oracles: NSMutableString

/** Mutable receivers: a plain mutable string, an empty one and an attributed string's view. */
static NSArray *cs_oracle_mutable_strings(NSMutableAttributedString **owner) {
    *owner = cs_attributed_string();
    return [NSArray arrayWithObjects:cs_mutable_string(), [NSMutableString string],
                                     [NSMutableString stringWithString:cs_unicode_string()], [*owner mutableString],
                                     nil];
}

static void *oracle_mstring_appendString(void) {
    NSMutableString *out = [NSMutableString string];
    NSMutableAttributedString *owner;
    for (NSMutableString *s in cs_oracle_mutable_strings(&owner)) {
        [s appendString:@""];
        [s appendString:@"d"];
        [s appendString:cs_unicode_string()];
        [out appendFormat:@"%@ | ", s];
    }
    [out appendString:cs_attributed_text(owner)];
    return cs_autoreleased_pointer(out);
}

static void *oracle_mstring_insertString(void) {
    NSMutableString *out = [NSMutableString string];
    NSMutableAttributedString *owner;
    for (NSMutableString *s in cs_oracle_mutable_strings(&owner)) {
        [s insertString:@"<" atIndex:0];
        [s insertString:@">" atIndex:[s length]];
        [s insertString:@"" atIndex:1];
        [s insertString:cs_utf8("\xc3\xa9") atIndex:1];
        [out appendFormat:@"%@ | ", s];
    }
    [out appendString:cs_attributed_text(owner)];
    return cs_autoreleased_pointer(out);
}

static void *oracle_mstring_deleteCharactersInRange(void) {
    NSMutableString *out = [NSMutableString string];
    NSMutableAttributedString *owner;
    for (NSMutableString *s in cs_oracle_mutable_strings(&owner)) {
        [s deleteCharactersInRange:NSMakeRange(0, 0)];
        [s deleteCharactersInRange:NSMakeRange([s length], 0)];
        if ([s length] > 1) [s deleteCharactersInRange:NSMakeRange(1, 1)];
        [out appendFormat:@"%@ ", s];
        [s deleteCharactersInRange:NSMakeRange(0, [s length])];
        [out appendFormat:@"%@ | ", cs_describe(s)];
    }
    [out appendString:cs_attributed_text(owner)];
    return cs_autoreleased_pointer(out);
}

static void *oracle_mstring_replaceCharactersInRange(void) {
    NSMutableString *out = [NSMutableString string];
    NSMutableAttributedString *owner;
    for (NSMutableString *s in cs_oracle_mutable_strings(&owner)) {
        [s replaceCharactersInRange:NSMakeRange(0, 0) withString:@"<"];
        [s replaceCharactersInRange:NSMakeRange([s length], 0) withString:@">"];
        [s replaceCharactersInRange:NSMakeRange(1, 1) withString:cs_utf8("\xc3\xa9\xc3\xa9")];
        [s replaceCharactersInRange:NSMakeRange(1, 0) withString:@""];
        [out appendFormat:@"%@ ", s];
        [s replaceCharactersInRange:NSMakeRange(0, [s length]) withString:@""];
        [out appendFormat:@"%@ | ", cs_describe(s)];
    }
    [out appendString:cs_attributed_text(owner)];
    return cs_autoreleased_pointer(out);
}

#pragma mark - Oracles: NSAttributedString

static NSDictionary *cs_oracle_attributes(void) {
    return [NSDictionary dictionaryWithObjectsAndKeys:@"1", @"one", @"2", @"two", nil];
}

static void *oracle_astring_initWithString(void) {
    NSMutableString *out = [NSMutableString string];
    NSString *texts[] = {@"", @"abc", cs_unicode_string(), cs_mutable_string()};
    for (size_t t = 0; t < sizeof texts / sizeof texts[0]; t++) {
        NSAttributedString *plain = [[NSAttributedString alloc] initWithString:texts[t]];
        NSMutableAttributedString *mutable = [[NSMutableAttributedString alloc] initWithString:texts[t]];
        [[mutable mutableString] appendString:@"!"];
        [out appendFormat:@"%@ / %@ | ", cs_attributed_text(plain), cs_attributed_text(mutable)];
        CS_RELEASE(plain);
        CS_RELEASE(mutable);
    }
    return cs_autoreleased_pointer(out);
}

static void *oracle_astring_initWithStringAttributes(void) {
    NSMutableString *out = [NSMutableString string];
    NSString *texts[] = {@"", @"abc", cs_unicode_string()};
    NSDictionary *attributes[] = {nil, [NSDictionary dictionary], cs_oracle_attributes()};
    for (size_t t = 0; t < sizeof texts / sizeof texts[0]; t++) {
        for (size_t a = 0; a < sizeof attributes / sizeof attributes[0]; a++) {
            NSAttributedString *plain = [[NSAttributedString alloc] initWithString:texts[t] attributes:attributes[a]];
            NSMutableAttributedString *mutable = [[NSMutableAttributedString alloc] initWithString:texts[t]
                                                                                        attributes:attributes[a]];
            [out appendFormat:@"%@ / %@ | ", cs_attributed_text(plain), cs_attributed_text(mutable)];
            CS_RELEASE(plain);
            CS_RELEASE(mutable);
        }
    }
    return cs_autoreleased_pointer(out);
}

/** Attributed receivers: "abc" with a run, an empty one, one with attributes everywhere. */
static NSArray *cs_oracle_attributed_strings(void) {
    NSAttributedString *empty = CS_AUTORELEASE([[NSAttributedString alloc] initWithString:@""]);
    NSAttributedString *full = CS_AUTORELEASE(
        [[NSAttributedString alloc] initWithString:cs_unicode_string() attributes:cs_oracle_attributes()]);
    return [NSArray arrayWithObjects:cs_attributed_string(), empty, full, nil];
}

static void *oracle_astring_attributedSubstringFromRange(void) {
    NSMutableString *out = [NSMutableString string];
    for (NSAttributedString *text in cs_oracle_attributed_strings()) {
        NSRange ranges[8];
        NSUInteger count = cs_legal_ranges([text length], ranges);
        for (NSUInteger r = 0; r < count; r++)
            [out appendFormat:@"%@ ; ", cs_attributed_text([text attributedSubstringFromRange:ranges[r]])];
        [out appendString:@"| "];
    }
    return cs_autoreleased_pointer(out);
}

/** One past the last index an attribute read answers on this platform: GNUstep answers at
 *  index == length (the last run's attributes), Apple throws there. */
static NSUInteger cs_attribute_index_end(NSAttributedString *text) {
#if defined(__APPLE__)
    return [text length];
#else
    return [text length] + 1;
#endif
}

/** GNUstep Base's own suite, NSMutableAttributedString/test01.m:131: the attributes at
 *  index == length before a replacement, for every (start, length) the test walks. */
static void *oracle_mastring_attributesAtLength_gnustep_suite(void) {
    NSMutableString *out = [NSMutableString string];
    NSDictionary *attr1 = [NSDictionary dictionaryWithObject:@"1" forKey:@"a"];
    NSDictionary *attr2 = [NSDictionary dictionaryWithObject:@"2" forKey:@"b"];
    NSDictionary *attrE = [NSDictionary dictionary];
    for (NSUInteger start = 0; start <= 8; start++) {
        for (NSUInteger length = 0; length <= 8 - start; length++) {
            if (start == 0 && length == 8) continue;
            NSMutableAttributedString *text = [[NSMutableAttributedString alloc] initWithString:@"aabbccdd" attributes:attr2];
            [text setAttributes:attr1 range:NSMakeRange(2, 2)];
            [text setAttributes:attrE range:NSMakeRange(4, 2)];
            NSRange run = NSMakeRange(7, 7);
            NSDictionary *begin = [text attributesAtIndex:(start == 0) ? length : 0 effectiveRange:&run];
            NSDictionary *end = [text attributesAtIndex:((start + length) == 8) ? (start - 1) : 8 effectiveRange:NULL];
            id value = [text attribute:@"b" atIndex:[text length] effectiveRange:NULL];
            [text replaceCharactersInRange:NSMakeRange(start, length) withString:@""];
            [out appendFormat:@"%lu,%lu %@%@ %@ %@ %@; ", (unsigned long)start, (unsigned long)length,
                              cs_attributes_text(begin), cs_range_text(run), cs_attributes_text(end), cs_describe(value),
                              cs_attributed_text(text)];
            CS_RELEASE(text);
        }
    }
    return cs_autoreleased_pointer(out);
}

static void *oracle_astring_attributeAtIndex(void) {
    NSMutableString *out = [NSMutableString string];
    NSString *names[] = {@"k", @"one", @"none"};
    for (NSAttributedString *text in cs_oracle_attributed_strings()) {
        for (NSUInteger i = 0; i < cs_attribute_index_end(text); i++) {
            for (size_t n = 0; n < sizeof names / sizeof names[0]; n++) {
                NSRange effective = NSMakeRange(7, 7);
                id value = [text attribute:names[n] atIndex:i effectiveRange:&effective];
                [out appendFormat:@"%@%@ ", cs_describe(value), cs_range_text(effective)];
                [out appendFormat:@"%@ ", cs_describe([text attribute:names[n] atIndex:i effectiveRange:NULL])];
            }
        }
        [out appendString:@"| "];
    }
    return cs_autoreleased_pointer(out);
}

static void *oracle_astring_attributesAtIndex(void) {
    NSMutableString *out = [NSMutableString string];
    for (NSAttributedString *text in cs_oracle_attributed_strings()) {
        for (NSUInteger i = 0; i < cs_attribute_index_end(text); i++) {
            NSRange effective = NSMakeRange(7, 7);
            NSDictionary *attributes = [text attributesAtIndex:i effectiveRange:&effective];
            [out appendFormat:@"%@%@ ", cs_attributes_text(attributes), cs_range_text(effective)];
            [out appendFormat:@"%@ ", cs_attributes_text([text attributesAtIndex:i effectiveRange:NULL])];
        }
        [out appendString:@"| "];
    }
    return cs_autoreleased_pointer(out);
}

#pragma mark - Oracles: NSMutableAttributedString

static NSArray *cs_oracle_mutable_attributed_strings(void) {
    NSMutableAttributedString *empty = CS_AUTORELEASE([[NSMutableAttributedString alloc] initWithString:@""]);
    NSMutableAttributedString *full = CS_AUTORELEASE(
        [[NSMutableAttributedString alloc] initWithString:cs_unicode_string() attributes:cs_oracle_attributes()]);
    return [NSArray arrayWithObjects:cs_attributed_string(), empty, full, nil];
}

static void *oracle_mastring_addAttribute(void) {
    NSMutableString *out = [NSMutableString string];
    for (NSMutableAttributedString *text in cs_oracle_mutable_attributed_strings()) {
        NSUInteger length = [text length];
        [text addAttribute:@"a" value:@"0" range:NSMakeRange(0, 0)];
        [text addAttribute:@"b" value:@"end" range:NSMakeRange(length, 0)];
        [text addAttribute:@"c" value:@"all" range:NSMakeRange(0, length)];
        if (length > 1) [text addAttribute:@"k" value:@"w" range:NSMakeRange(length - 1, 1)];
        [out appendFormat:@"%@ | ", cs_attributed_text(text)];
    }
    return cs_autoreleased_pointer(out);
}

static void *oracle_mastring_setAttributes(void) {
    NSMutableString *out = [NSMutableString string];
    for (NSMutableAttributedString *text in cs_oracle_mutable_attributed_strings()) {
        NSUInteger length = [text length];
        [text setAttributes:cs_oracle_attributes() range:NSMakeRange(length, 0)];
        [text setAttributes:nil range:NSMakeRange(0, 0)];
        if (length > 1) [text setAttributes:nil range:NSMakeRange(0, 1)];
        if (length > 2) [text setAttributes:[NSDictionary dictionaryWithObject:@"s" forKey:@"set"] range:NSMakeRange(1, 1)];
        [out appendFormat:@"%@ | ", cs_attributed_text(text)];
    }
    return cs_autoreleased_pointer(out);
}

static void *oracle_mastring_replaceCharactersInRange(void) {
    NSMutableString *out = [NSMutableString string];
    for (NSMutableAttributedString *text in cs_oracle_mutable_attributed_strings()) {
        [text replaceCharactersInRange:NSMakeRange(0, 0) withString:@"<"];
        [text replaceCharactersInRange:NSMakeRange([text length], 0) withString:@">"];
        [text replaceCharactersInRange:NSMakeRange(1, 1) withString:cs_utf8("\xc3\xa9\xc3\xa9")];
        [text replaceCharactersInRange:NSMakeRange(1, 0) withString:@""];
        [out appendFormat:@"%@ ; ", cs_attributed_text(text)];
        [text replaceCharactersInRange:NSMakeRange(0, [text length]) withString:@""];
        [out appendFormat:@"%@ | ", cs_attributed_text(text)];
    }
    return cs_autoreleased_pointer(out);
}

/** Deleting goes through replaceCharactersInRange:withString: with a nil string inside GNUstep:
 *  the guard must leave that internal call alone. */
static void *oracle_mastring_deleteCharactersInRange(void) {
    NSMutableString *out = [NSMutableString string];
    for (NSMutableAttributedString *text in cs_oracle_mutable_attributed_strings()) {
        [text deleteCharactersInRange:NSMakeRange(0, 0)];
        [text deleteCharactersInRange:NSMakeRange([text length], 0)];
        if ([text length] > 1) [text deleteCharactersInRange:NSMakeRange(1, 1)];
        [out appendFormat:@"%@ ; ", cs_attributed_text(text)];
        [text deleteCharactersInRange:NSMakeRange(0, [text length])];
        [out appendFormat:@"%@ | ", cs_attributed_text(text)];
    }
    return cs_autoreleased_pointer(out);
}

#pragma mark - Oracles: selectors added by the selector survey

static void *oracle_string_stringByReplacingOccurrences(void) {
    NSMutableString *out = [NSMutableString string];
    for (NSString *text in cs_oracle_strings()) {
        [out appendFormat:@"'%@' '%@' '%@' ", [text stringByReplacingOccurrencesOfString:@"b" withString:@"XY"],
                          [text stringByReplacingOccurrencesOfString:@"" withString:@"-"],
                          [text stringByReplacingOccurrencesOfString:@"q" withString:@""]];
    }
    return cs_autoreleased_pointer(out);
}
static void *oracle_string_stringByReplacingOccurrencesOptionsRange(void) {
    NSMutableString *out = [NSMutableString string];
    for (NSString *text in cs_oracle_strings()) {
        NSUInteger length = [text length];
        [out appendFormat:@"'%@' '%@' ",
                          [text stringByReplacingOccurrencesOfString:@"B" withString:@"x" options:NSCaseInsensitiveSearch
                                                               range:NSMakeRange(0, length)],
                          [text stringByReplacingOccurrencesOfString:@"c" withString:@"" options:0
                                                               range:NSMakeRange(length, 0)]];
    }
    return cs_autoreleased_pointer(out);
}
static void *oracle_string_compare(void) {
    NSMutableString *out = [NSMutableString string];
    for (NSString *text in cs_oracle_strings())
        [out appendFormat:@"%ld %ld %ld ", (long)[text compare:@"abc"], (long)[text compare:@""], (long)[@"b" compare:text]];
    return cs_autoreleased_pointer(out);
}
static void *oracle_string_containsString(void) {
    NSMutableString *out = [NSMutableString string];
    for (NSString *text in cs_oracle_strings())
        [out appendFormat:@"%d%d%d ", (int)[text containsString:@"b"], (int)[text containsString:@""],
                          (int)[text containsString:text]];
    return cs_autoreleased_pointer(out);
}
static void *oracle_string_componentsSeparatedByString(void) {
    NSMutableString *out = [NSMutableString string];
    for (NSString *text in cs_oracle_strings())
        [out appendFormat:@"(%@) (%@) ", [[text componentsSeparatedByString:@"b"] componentsJoinedByString:@"|"],
                          [[text componentsSeparatedByString:@","] componentsJoinedByString:@"|"]];
    return cs_autoreleased_pointer(out);
}
static void *oracle_mastring_removeAttribute(void) {
    NSMutableString *out = [NSMutableString string];
    NSUInteger length = [cs_attributed_string() length];
    NSRange ranges[] = {NSMakeRange(0, 0), NSMakeRange(0, 1), NSMakeRange(1, 2), NSMakeRange(length, 0),
                        NSMakeRange(0, length)};
    for (size_t i = 0; i < sizeof ranges / sizeof ranges[0]; i++) {
        NSMutableAttributedString *text = cs_attributed_string();
        [text removeAttribute:@"k" range:ranges[i]];
        [text removeAttribute:@"absent" range:ranges[i]];
        [out appendFormat:@"%@; ", cs_attributed_text(text)];
    }
    return cs_autoreleased_pointer(out);
}
static void *oracle_mastring_addAttributes(void) {
    NSMutableString *out = [NSMutableString string];
    NSDictionary *attributes = [NSDictionary dictionaryWithObjectsAndKeys:@"1", @"one", @"2", @"two", nil];
    NSUInteger length = [cs_attributed_string() length];
    NSRange ranges[] = {NSMakeRange(0, 1), NSMakeRange(1, 2), NSMakeRange(0, length), NSMakeRange(length, 0)};
    for (size_t i = 0; i < sizeof ranges / sizeof ranges[0]; i++) {
        NSMutableAttributedString *text = cs_attributed_string();
        [text addAttributes:attributes range:ranges[i]];
        [text addAttributes:[NSDictionary dictionary] range:ranges[i]];
        [out appendFormat:@"%@; ", cs_attributed_text(text)];
    }
    return cs_autoreleased_pointer(out);
}

#if !defined(__APPLE__)
/** GNUstep's legal nil-string edits (Apple raises; see CS_NIL_EDIT_STRING_IS_MISUSE in the guard):
 *  appended or inserted as nothing, a replacement by nil deletes the range. */
static void *oracle_gnustep_nil_string_edits(void) {
    NSString *nothing = cs_opaque(nil);
    NSMutableString *out = [NSMutableString string];
    NSString *base = [NSString stringWithFormat:@"%@", @"abc"];
    [out appendFormat:@"%@ %@ | ", [base stringByAppendingString:nothing],
                      [base stringByReplacingCharactersInRange:NSMakeRange(1, 1) withString:nothing]];
    NSMutableString *m = [NSMutableString stringWithString:@"abc"];
    [m appendString:nothing];
    [m insertString:nothing atIndex:1];
    [m replaceCharactersInRange:NSMakeRange(0, 1) withString:nothing];
    NSMutableAttributedString *a = [[NSMutableAttributedString alloc] initWithString:@"abcd"];
    [a replaceCharactersInRange:NSMakeRange(1, 2) withString:nothing];
    [out appendFormat:@"%@ | %@", m, [a string]];
    CS_RELEASE(a);
    return cs_autoreleased_pointer(out);
}
#endif

static const cs_oracle kOracles[] = {
#if !defined(__APPLE__)
    {"NSString nil string in edits (GNUstep: legal)", oracle_gnustep_nil_string_edits},
#endif
    {"NSString stringByReplacingOccurrencesOfString:withString:", oracle_string_stringByReplacingOccurrences},
    {"NSString stringByReplacingOccurrencesOfString:withString:options:range:",
     oracle_string_stringByReplacingOccurrencesOptionsRange},
    {"NSString compare:", oracle_string_compare},
    {"NSString containsString:", oracle_string_containsString},
    {"NSString componentsSeparatedByString:", oracle_string_componentsSeparatedByString},
    {"NSMutableAttributedString removeAttribute:range:", oracle_mastring_removeAttribute},
    {"NSMutableAttributedString addAttributes:range:", oracle_mastring_addAttributes},
    {"NSString characterAtIndex:", oracle_string_characterAtIndex},
    {"NSString substringFromIndex:", oracle_string_substringFromIndex},
    {"NSString substringToIndex:", oracle_string_substringToIndex},
    {"NSString substringWithRange:", oracle_string_substringWithRange},
    {"NSString rangeOfString:", oracle_string_rangeOfString},
    {"NSString rangeOfString:options:", oracle_string_rangeOfStringOptions},
    {"NSString rangeOfString:options:range:", oracle_string_rangeOfStringOptionsRange},
    {"NSString rangeOfString:options:range:locale:", oracle_string_rangeOfStringOptionsRangeLocale},
    {"NSString hasPrefix:", oracle_string_hasPrefix},
    {"NSString hasSuffix:", oracle_string_hasSuffix},
    {"NSString stringByReplacingCharactersInRange:withString:", oracle_string_stringByReplacingCharactersInRange},
    {"NSString stringByAppendingString:", oracle_string_stringByAppendingString},
    {"NSString initWithString:", oracle_string_initWithString},
    {"NSString +stringWithString:", oracle_string_stringWithString},
    {"NSMutableString appendString:", oracle_mstring_appendString},
    {"NSMutableString insertString:atIndex:", oracle_mstring_insertString},
    {"NSMutableString deleteCharactersInRange:", oracle_mstring_deleteCharactersInRange},
    {"NSMutableString replaceCharactersInRange:withString:", oracle_mstring_replaceCharactersInRange},
    {"NSAttributedString initWithString:", oracle_astring_initWithString},
    {"NSAttributedString initWithString:attributes:", oracle_astring_initWithStringAttributes},
    {"NSAttributedString attributedSubstringFromRange:", oracle_astring_attributedSubstringFromRange},
    {"NSAttributedString attribute:atIndex:effectiveRange:", oracle_astring_attributeAtIndex},
    {"NSAttributedString attributesAtIndex:effectiveRange:", oracle_astring_attributesAtIndex},
    {"NSMutableAttributedString attributesAtIndex:effectiveRange: at length (GNUstep suite test01.m:131)",
     oracle_mastring_attributesAtLength_gnustep_suite},
    {"NSMutableAttributedString addAttribute:value:range:", oracle_mastring_addAttribute},
    {"NSMutableAttributedString setAttributes:range:", oracle_mastring_setAttributes},
    {"NSMutableAttributedString replaceCharactersInRange:withString:", oracle_mastring_replaceCharactersInRange},
    {"NSMutableAttributedString deleteCharactersInRange:", oracle_mastring_deleteCharactersInRange},
};
const cs_oracle_table cs_string_oracles = CS_TABLE(kOracles);

#pragma mark - Concurrency stress

/* Shared receivers are only read (or receive misuses, which the guard turns into no-ops), so
 * sharing them across threads is legal; legal mutations go to thread-local strings. The
 * receivers stay alive in cs_strings_stress()'s autorelease pool until every thread has joined
 * (unretained here so the struct also compiles under ARC). */
typedef struct {
    __unsafe_unretained NSString *literal;
    __unsafe_unretained NSString *made;
    __unsafe_unretained NSString *unicode;
    __unsafe_unretained NSMutableString *mutable;
    __unsafe_unretained NSAttributedString *attributed;
    unsigned iterations;
    uint64_t misuses;      /* __atomic */
    uint64_t wrong_results; /* __atomic */
} cs_strings_stress_state;

static void *cs_strings_stress_thread(void *argument) {
    cs_strings_stress_state *state = argument;
    uint64_t misuses = 0, wrong = 0;
    for (unsigned i = 0; i < state->iterations; i++) {
        @autoreleasepool {
            NSUInteger at = i % 3;
            /* Legal calls on the shared strings. */
            if ([state->literal characterAtIndex:at] != (unichar)("abc"[at])) wrong++;
            if ([state->made characterAtIndex:at] != (unichar)("abc"[at])) wrong++;
            if ([state->unicode characterAtIndex:1] != 0xe9) wrong++;
            if (![[state->mutable substringWithRange:NSMakeRange(at, 1)] isEqualToString:[state->literal substringWithRange:NSMakeRange(at, 1)]])
                wrong++;
            if ([state->literal rangeOfString:@"c"].location != 2) wrong++;
            /* Misuses on the shared strings. */
            if ([state->literal characterAtIndex:3 + i] != 0) wrong++;
            misuses++;
            if ([state->made characterAtIndex:NSUIntegerMax - i] != 0) wrong++;
            misuses++;
            if (![[state->unicode substringWithRange:NSMakeRange(4, 2 + i)] isEqualToString:@"o"]) wrong++;
            misuses++;
            if (![[state->mutable substringWithRange:cs_raw_range(1, NSUIntegerMax)] isEqualToString:@"bc"]) wrong++;
            misuses++;
            [state->mutable insertString:@"x" atIndex:9]; /* appendString:nil is legal on GNUstep */
            misuses++;
            [state->mutable replaceCharactersInRange:NSMakeRange(2, 5) withString:@"x"];
            misuses++;
            [state->mutable deleteCharactersInRange:cs_raw_range(NSUIntegerMax, 2)];
            misuses++;
            if ([state->mutable length] != 3) wrong++;
            if ([[state->attributed attributesAtIndex:10 + i effectiveRange:NULL] count] != 0) wrong++;
            misuses++;
            if ([state->literal hasPrefix:(NSString *)nil]) wrong++;
            misuses++;
            /* Legal mutations on a thread-local string. */
            NSMutableString *local = [NSMutableString stringWithString:state->literal];
            [local appendString:@"d"];
            [local insertString:@"<" atIndex:0];
            [local deleteCharactersInRange:NSMakeRange(1, 1)];
            [local replaceCharactersInRange:NSMakeRange([local length], 0) withString:@">"];
            if (![local isEqualToString:@"<bcd>"]) wrong++;
        }
    }
    __atomic_fetch_add(&state->misuses, misuses, __ATOMIC_RELAXED);
    __atomic_fetch_add(&state->wrong_results, wrong, __ATOMIC_RELAXED);
    return NULL;
}

uint64_t cs_strings_stress(unsigned threads, unsigned iterations, uint64_t *wrong_results) {
    cs_strings_stress_state state = {0};
    uint64_t misuses = 0;
    @autoreleasepool {
        NSString *made = cs_format_string(), *unicode = cs_unicode_string();
        NSMutableString *mutable = cs_mutable_string();
        NSAttributedString *attributed = cs_attributed_string();
        state.literal = @"abc";
        state.made = made;
        state.unicode = unicode;
        state.mutable = mutable;
        state.attributed = attributed;
        state.iterations = iterations;
        pthread_t *ids = calloc(threads, sizeof(pthread_t));
        unsigned started = 0;
        for (unsigned t = 0; t < threads; t++)
            if (pthread_create(&ids[t], NULL, cs_strings_stress_thread, &state) == 0) started++;
            else break;
        for (unsigned t = 0; t < started; t++) pthread_join(ids[t], NULL);
        free(ids);
        if (started != threads) state.wrong_results++;
        misuses = __atomic_load_n(&state.misuses, __ATOMIC_ACQUIRE);
    }
    if (wrong_results) *wrong_results = __atomic_load_n(&state.wrong_results, __ATOMIC_ACQUIRE);
    return misuses;
}
