/* test_runtime_shared.c: libtilert.so as a host program sees it: the public
 * API links, works without a driver, and exports nothing but tilert_* (the
 * metadata reader and ELF walker stay internal). */
#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "tilert.h"

static void test_public_api(void **state)
{
    (void)state;
    assert_int_equal(tilert_init(), TILERT_ERROR_NO_DRIVER);
    assert_non_null(strstr(tilert_last_error(), "no CUDA driver"));
    tilert_module *m;
    static const uint8_t junk[64] = {0x7f, 'E', 'L', 'F', 2, 1};
    assert_int_equal(tilert_module_load_data(junk, sizeof junk, &m), TILERT_ERROR_INVALID_IMAGE);
    assert_non_null(strstr(tilert_last_error(), "ELF machine 0"));
    tilert_tensor t = tilert_tensor2d((void *)0x100, TILERT_BF16, 3, 4);
    assert_int_equal(t.stride[0], 4);
}

static void test_exports(void **state)
{
    (void)state;
    void *self = dlopen(NULL, RTLD_NOW);
    assert_non_null(dlsym(self, "tilert_launch"));
    assert_null(dlsym(self, "tilert_meta_parse"));
    assert_null(dlsym(self, "tilert_elf_inspect"));
    dlclose(self);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_public_api),
        cmocka_unit_test(test_exports),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
