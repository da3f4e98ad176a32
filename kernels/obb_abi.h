/* obbmeta: the table each compiled library gives obbmeta/_native.py to check Python's ctypes mirrors against when it
 * loads (NativeLibrary.structs / .constants): entry "T" is sizeof(T), "T.f" is offsetof(T, f), any other name a
 * constant. A library lists its entries with OBB_ABI_SIZE / OBB_ABI_OFFSET / OBB_ABI_CONST in a static table and
 * returns OBB_ABI_COPY(table, names, values, capacity) from its exported *_abi_table function. */
#ifndef OBB_ABI_H
#define OBB_ABI_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    const char *name;
    int64_t value;
} obb_abi_entry;

#define OBB_ABI_SIZE(T) {#T, (int64_t)sizeof(T)}
#define OBB_ABI_OFFSET(T, F) {#T "." #F, (int64_t)offsetof(T, F)}
#define OBB_ABI_CONST(C) {#C, (int64_t)(C)}

/* Copies at most `capacity` of the `count` entries into names / values; returns `count`. */
static inline int64_t obb_abi_copy(const obb_abi_entry *table, int64_t count, const char **names, int64_t *values,
                                   int64_t capacity)
{
    for (int64_t i = 0; i < count && i < capacity; ++i) {
        names[i] = table[i].name;
        values[i] = table[i].value;
    }
    return count;
}

#define OBB_ABI_COPY(table, names, values, capacity) \
    obb_abi_copy((table), (int64_t)(sizeof(table) / sizeof((table)[0])), (names), (values), (capacity))

#endif
