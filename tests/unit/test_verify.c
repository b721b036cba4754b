/* test_verify.c: the IR verifier accepts valid kernels (every golden .tir
 * file, a builder-made kernel) and rejects each kind of broken IR with a
 * message that names the pass, the op and what is wrong.  Most broken kernels
 * are written as text (the parser checks syntax and names, not types); the
 * ones text cannot express (dominance, dead ops, bad counts) are made with
 * the builder. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ir.h"

static IrModule *parse_or_fail(const char *text)
{
    Diag d;
    diag_init(&d, "t.tir", text, strlen(text), NULL, DIAG_COLOR_NEVER);
    d.capture = true;
    IrModule *m = ir_parse("k.tile", text, strlen(text), &d);
    if (!m) fail_msg("test input does not parse:\n%s\n%s", d.buf.s, text);
    diag_free(&d);
    return m;
}

/* Verifies m after a pass named "testpass"; returns the messages (malloc'd). */
static char *verify(IrModule *m, bool *ok)
{
    Diag d;
    diag_init(&d, "k.tile", NULL, 0, NULL, DIAG_COLOR_NEVER);
    d.capture = true;
    *ok = ir_verify_module(m, &d, "testpass");
    char *msgs = tl_xstrdup(d.buf.s ? d.buf.s : "");
    if (*ok) assert_int_equal(d.nerrors, 0);
    else assert_int_equal(d.nerrors, 1); /* one error per broken kernel: the first */
    diag_free(&d);
    return msgs;
}

static void expect_valid(const char *text)
{
    IrModule *m = parse_or_fail(text);
    bool ok;
    char *msgs = verify(m, &ok);
    if (!ok) fail_msg("valid IR rejected:\n%s\n%s", msgs, text);
    free(msgs);
    ir_module_free(m);
}

static void expect_invalid_mod(IrModule *m, const char *needle)
{
    bool ok;
    char *msgs = verify(m, &ok);
    if (ok) fail_msg("broken IR accepted (expected '%s')", needle);
    if (!strstr(msgs, "tilec: error: IR verification failed after pass 'testpass': kernel @k: "))
        fail_msg("message lacks the standard prefix:\n%s", msgs);
    if (!strstr(msgs, needle)) fail_msg("expected '%s' in:\n%s", needle, msgs);
    free(msgs);
}

static void expect_invalid(const char *text, const char *needle)
{
    IrModule *m = parse_or_fail(text);
    expect_invalid_mod(m, needle);
    ir_module_free(m);
}

/* A kernel around `body`; parameters: %x i32, %f f32, %p ptr<f32>, %t tile<f32>[16, 8], %v tensor<f16, 2>. */
#define K(body)                                                                                    \
    "kernel @k \"k\"(%x: i32, %f: f32, %p: ptr<f32>, %t: tile<f32>[16, 8], %v: tensor<f16, 2>) {\n" body \
    "  return\n}\n"

static void test_golden_files_verify(void **state)
{
    (void)state;
    const char *dir = TILEC_SOURCE_DIR "/tests/golden";
    DIR *dp = opendir(dir);
    assert_non_null(dp);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(dp))) {
        size_t len = strlen(e->d_name);
        if (len < 5 || strcmp(e->d_name + len - 4, ".tir") != 0) continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        char *text = tl_read_file(path, NULL);
        assert_non_null(text);
        expect_valid(text);
        free(text);
        n++;
    }
    closedir(dp);
    assert_true(n >= 8);
}

static void test_valid_small(void **state)
{
    (void)state;
    expect_valid(K("  %0 = add %x, %x : i32\n"));
    /* reduce_sum may widen to its accumulation type; block_load's 'other' may be a scalar */
    expect_valid("kernel @k \"k\"(%a: tile<i8>[4, 4], %v: tensor<f16, 2>) {\n"
                 "  %0 = reduce_sum %a {axis = 1} : tile<i32>[4]\n"
                 "  %1 = reduce_sum %a {axis = 1} : tile<i8>[4]\n"
                 "  %o = const 0 : i32\n  %z = const 0 : f16\n"
                 "  %2 = block_load %v, %o, %o, %z : tile<f16>[16, 16]\n"
                 "  return\n}\n");
}

/* Broken IR written as text: one case per rule. */
static void test_type_rules(void **state)
{
    (void)state;
    /* binary ops: one type */
    expect_invalid(K("  %0 = add %x, %f : i32\n"), "'add': operand types differ: i32 and f32");
    expect_invalid(K("  %0 = add %x, %x : i64\n"), "'add': result is i64, operands are i32");
    expect_invalid(K("  %0 = xor %f, %f : f32\n"), "'xor': operands are f32, not integers");
    /* cmp gives i1 of the operand shape */
    expect_invalid(K("  %0 = cmp lt %x, %x : i32\n"), "'cmp': result is i32, expected i1");
    expect_invalid(K("  %0 = cmp lt %t, %t : i1\n"), "'cmp': result is i1, expected tile<i1>[16, 8]");
    /* addptr */
    expect_invalid(K("  %a = arange : tile<i32>[16]\n  %q = splat %p : tile<ptr<f32>>[8]\n"
                     "  %0 = addptr %q, %a : tile<ptr<f32>>[8]\n"),
                   "'addptr': offset is tile<i32>[16], expected integers of the shape of tile<ptr<f32>>[8]");
    expect_invalid(K("  %0 = addptr %x, %x : i32\n"), "'addptr': first operand is i32, not a pointer");
    /* load / store */
    expect_invalid(K("  %0 = load %p : f16\n"), "'load': result is f16, expected f32");
    expect_invalid(K("  %a = arange : tile<i32>[16]\n  %q = splat %p : tile<ptr<f32>>[16]\n"
                     "  %0 = load %q, %a : tile<f32>[16]\n"),
                   "'load': mask is tile<i32>[16], expected i1 of the shape of tile<ptr<f32>>[16]");
    expect_invalid(K("  %0 = load %p, %x, %x : f32\n"), "'load': mask is i32");
    expect_invalid(K("  store %p, %x\n"), "'store': stored value is i32, expected f32");
    /* block_load: 1 + rank offsets (+ other) */
    expect_invalid(K("  %o = const 0 : i32\n  %0 = block_load %v, %o : tile<f16>[16, 16]\n"),
                   "'block_load': 2 operands for a rank-2 tensor: expected the tensor, 2 offsets");
    expect_invalid(K("  %o = const 0 : f32\n  %0 = block_load %v, %o, %o : tile<f16>[16, 16]\n"),
                   "'block_load': offset 0 is f32, not an integer scalar");
    expect_invalid(K("  %o = const 0 : i32\n  %0 = block_load %v, %o, %o : tile<f32>[16, 16]\n"),
                   "'block_load': block is tile<f32>[16, 16], expected a rank-2 tile of f16");
    expect_invalid(K("  %o = const 0 : i32\n  block_store %v, %o, %o, %t\n"),
                   "'block_store': block is tile<f32>[16, 8], expected a rank-2 tile of f16");
    /* dot */
    expect_invalid("kernel @k \"k\"(%a: tile<f16>[16, 32], %b: tile<f16>[16, 8], %c: tile<f32>[16, 8]) {\n"
                   "  %0 = dot %a, %b, %c : tile<f32>[16, 8]\n  return\n}\n",
                   "'dot': inner dimensions differ: tile<f16>[16, 32] and tile<f16>[16, 8]");
    expect_invalid("kernel @k \"k\"(%a: tile<f16>[16, 16], %b: tile<f16>[16, 8], %c: tile<f16>[16, 8]) {\n"
                   "  %0 = dot %a, %b, %c : tile<f32>[16, 8]\n  return\n}\n",
                   "'dot': accumulator is tile<f16>[16, 8], expected tile<f32>[16, 8]");
    expect_invalid("kernel @k \"k\"(%a: tile<i8>[16, 16], %b: tile<i8>[16, 8], %c: tile<f32>[16, 8]) {\n"
                   "  %0 = dot %a, %b, %c : tile<f32>[16, 8]\n  return\n}\n",
                   "'dot': operands are i8 (dot takes f16, bf16, f8e4m3, f8e5m2 or f32)");
    /* reductions */
    expect_invalid(K("  %0 = reduce_max %t {axis = 1} : tile<f32>[8]\n"),
                   "'reduce_max': result is tile<f32>[8], expected tile<f32>[16]");
    expect_invalid(K("  %0 = argmax %t {axis = 2} : tile<i32>[16]\n"), "'argmax': axis 2 out of range for tile<f32>[16, 8]");
    expect_invalid(K("  %0 = argmin %t {axis = 0} : tile<f32>[8]\n"), "'argmin': result is tile<f32>[8], expected tile<i32>[8]");
    /* topk */
    expect_invalid(K("  %0:2 = topk %t {axis = 1, k = 16} : tile<f32>[16, 16], tile<i32>[16, 16]\n"),
                   "'topk': k = 16 must be a power of two no larger than 8");
    expect_invalid(K("  %0:2 = topk %t {axis = 1, k = 4} : tile<f32>[16, 4], tile<i64>[16, 4]\n"),
                   "'topk': indices are tile<i64>[16, 4], expected tile<i32>[16, 4]");
    /* conversions */
    expect_invalid(K("  %0 = bitcast %x : i16\n"), "'bitcast': bitcast from i32 to i16 changes the bit width");
    expect_invalid(K("  %0 = cast %t : tile<f16>[16, 16]\n"), "'cast': cannot convert tile<f32>[16, 8] to tile<f16>[16, 16]");
    /* shapes */
    expect_invalid(K("  %0 = broadcast %t : tile<f32>[32, 16]\n"), "'broadcast': cannot broadcast tile<f32>[16, 8] to tile<f32>[32, 16]");
    expect_invalid(K("  %0 = reshape %t : tile<f32>[64]\n"), "'reshape': reshape from tile<f32>[16, 8] to tile<f32>[64]");
    expect_invalid(K("  %0 = trans %t {perm = [0, 0]} : tile<f32>[16, 8]\n"), "'trans': perm is not a permutation of 0..1");
    expect_invalid(K("  %0 = expand_dims %t {axis = 1} : tile<f32>[16, 8, 1]\n"),
                   "'expand_dims': result is tile<f32>[16, 8, 1], expected tile<f32>[16, 1, 8]");
    /* tile dims are powers of two, at most 2^24 elements */
    expect_invalid(K("  %0 = splat %f : tile<f32>[12]\n"), "'splat': a result: tile dimension 0 is 12, not a power of two");
    expect_invalid(K("  %0 = splat %f : tile<f32>[8192, 4096]\n"), "holds more than 2^24 elements");
    expect_invalid("kernel @k \"k\"(%a: tile<f32>[3]) {\n  return\n}\n", "a block argument: tile dimension 0 is 3");
    /* constants fit their type (signed or unsigned reading) */
    expect_valid(K("  %0 = const 255 : i8\n  %1 = const -128 : u8\n  %2 = const 1 : i1\n"));
    expect_invalid(K("  %0 = const 256 : i8\n"), "'const': 256 does not fit in i8");
    expect_invalid(K("  %0 = const 2 : i1\n"), "'const': 2 does not fit in i1");
    /* misc */
    expect_invalid(K("  %0 = program_id {axis = 3} : i32\n"), "'program_id': axis 3 is not 0, 1 or 2");
    expect_invalid(K("  %0 = view_shape %v {dim = 0} : i32\n"), "'view_shape': result is i32, expected i64");
    expect_invalid(K("  %0 = exp %x : i32\n"), "'exp': operand is i32, not floats");
    expect_invalid(K("  %c = cmp lt %t, %t : tile<i1>[16, 8]\n  %0 = select %c, %t, %f : tile<f32>[16, 8]\n"),
                   "'select': the two choices differ: tile<f32>[16, 8] and f32");
    expect_invalid(K("  assert %x {msg = \"m\"}\n"), "'assert': condition is i32, not i1");
}

static void test_control_flow_rules(void **state)
{
    (void)state;
    /* for: bounds, carried types, yield */
    expect_invalid(K("  for %i = %f to %f step %f {\n    yield\n  }\n"), "'for': lower bound is f32, not an integer scalar");
    expect_invalid(K("  %0 = for %i = %x to %x step %x iter(%a = %f) : f32 {\n    yield %x\n  }\n"),
                   "'yield': the loop's yield value 0 is i32, expected f32");
    expect_invalid(K("  %0 = for %i = %x to %x step %x iter(%a = %f) : f32 {\n    yield\n  }\n"),
                   "'yield': the loop's yield passes 0 values, expected 1");
    expect_invalid(K("  %0 = for %i = %x to %x step %x iter(%a = %f) : i32 {\n    yield %x\n  }\n"),
                   "'for': result 0 is i32, its initial value f32");
    expect_invalid(K("  for %i: i64 = %x to %x step %x {\n    yield\n  }\n"),
                   "'for': the loop body argument 0 is i64, expected i32");
    /* if: condition, yields */
    expect_invalid(K("  %0 = if %x : i32 {\n    yield %x\n  } else {\n    yield %x\n  }\n"),
                   "'if': condition is i32, not an i1 scalar");
    expect_invalid(K("  %c = cmp lt %x, %x : i1\n  %0 = if %c : i32 {\n    yield %x\n  } else {\n    yield %f\n  }\n"),
                   "'yield': the else branch's yield value 0 is f32, expected i32");
    expect_invalid(K("  %c = cmp lt %x, %x : i1\n  %0 = if %c : i32 {\n    yield\n  } else {\n    yield %x\n  }\n"),
                   "'yield': the then branch's yield passes 0 values, expected 1");
    /* while: condition, forwarded values, yield */
    expect_invalid(K("  %0 = while (%a = %x) : i32 {\n    condition %a, %a\n  } do (%b: i32) {\n    yield %b\n  }\n"),
                   "'condition': condition is i32, not an i1 scalar");
    expect_invalid(K("  %0 = while (%a = %x) : i32 {\n    %c = cmp lt %a, %a : i1\n    condition %c, %a\n"
                     "  } do (%b: f32) {\n    yield %x\n  }\n"),
                   "'condition': the condition value 0 is i32, expected f32");
    expect_invalid(K("  %0 = while (%a = %x) : f32 {\n    %c = cmp lt %a, %a : i1\n    condition %c, %a\n"
                     "  } do (%b: i32) {\n    yield %b\n  }\n"),
                   "'while': result 0 is f32, the condition forwards i32");
    expect_invalid(K("  %0 = while (%a = %x) : i32 {\n    %c = cmp lt %a, %a : i1\n    condition %c, %a\n"
                     "  } do (%b: i32) {\n    yield %f\n  }\n"),
                   "'yield': the 'after' region's yield value 0 is f32, expected i32");
    /* terminators: the expected one, last and only last */
    expect_invalid(K("  %c = cmp lt %x, %x : i1\n  if %c {\n    return\n  } else {\n    yield\n  }\n"),
                   "'return': block ends in 'return', expected 'yield'");
    expect_invalid(K("  %c = cmp lt %x, %x : i1\n  if %c {\n    yield\n    %0 = add %x, %x : i32\n    yield\n"
                     "  } else {\n    yield\n  }\n"),
                   "'yield': terminator before the end of its block");
    expect_invalid("kernel @k \"k\"(%x: i32) {\n  %0 = add %x, %x : i32\n}\n", "'add': block ends in 'add', expected 'return'");
    expect_invalid("kernel @k \"k\"(%x: i32) {\n}\n", "a block is empty (it must end in 'return')");
    expect_invalid(K("  %c = cmp lt %x, %x : i1\n  if %c {\n  } else {\n    yield\n  }\n"),
                   "'if': a block is empty (it must end in 'yield')");
    /* grid: 1 to 3 integer scalars */
    expect_invalid("kernel @k \"k\"(%x: i32, %f: f32) {\n  return\n} grid {\n  yield %x, %f\n}\n",
                   "'yield': grid size 1 is f32, not an integer scalar");
    expect_invalid("kernel @k \"k\"(%x: i32) {\n  return\n} grid {\n  yield\n}\n", "'yield': the grid yields 0 values, expected 1 to 3");
}

/* ---- broken IR only the builder can make --------------------------------------- */

static IrFunc *new_kernel(IrModule *m, IrBuilder *b, IrVal *x)
{
    IrFunc *f = ir_func_new(m, "k", "k", (SrcLoc){0, 0});
    *x = ir_func_add_param(f, "x", ir_ty_scalar(DT_I32));
    memset(b, 0, sizeof *b);
    ir_builder_at_end(b, f, f->body);
    return f;
}

static void test_dominance(void **state)
{
    (void)state;
    IrBuilder b;
    IrVal x;
    /* a use before the definition in the same block */
    IrModule *m = ir_module_new("k.tile");
    IrFunc *f = new_kernel(m, &b, &x);
    b.loc = (SrcLoc){7, 9};
    IrVal a = ir_binary(&b, IR_ADD, x, x);
    IrVal c = ir_binary(&b, IR_MUL, a, a);
    ir_build(&b, IR_RETURN, NULL, 0, NULL, 0, NULL);
    ir_set_opnd(f, f->vals[a].def, 1, c);
    expect_invalid_mod(m, "'add' at k.tile:7:9: operand 1 is used where it is not defined");
    ir_module_free(m);

    /* a value defined inside a region, used after it */
    m = ir_module_new("k.tile");
    f = new_kernel(m, &b, &x);
    IrVal one = ir_const_int(&b, DT_I32, 1);
    IrVal ops[3] = {x, x, one};
    uint32_t loop = ir_build(&b, IR_FOR, ops, 3, NULL, 0, NULL);
    IrBlk body = f->ops[loop].region[0];
    ir_block_add_arg(f, body, ir_ty_scalar(DT_I32));
    IrBuilder lb = {0};
    ir_builder_at_end(&lb, f, body);
    IrVal inner = ir_binary(&lb, IR_ADD, x, one);
    ir_build(&lb, IR_YIELD, NULL, 0, NULL, 0, NULL);
    ir_binary(&b, IR_SUB, inner, x);
    ir_build(&b, IR_RETURN, NULL, 0, NULL, 0, NULL);
    expect_invalid_mod(m, "'sub': operand 0 is used where it is not defined");
    ir_module_free(m);

    /* the result of an erased op */
    m = ir_module_new("k.tile");
    f = new_kernel(m, &b, &x);
    IrVal dead = ir_binary(&b, IR_ADD, x, x);
    ir_binary(&b, IR_SUB, dead, x);
    ir_build(&b, IR_RETURN, NULL, 0, NULL, 0, NULL);
    ir_op_erase(f, f->vals[dead].def);
    expect_invalid_mod(m, "'sub': operand 0 is used where it is not defined");
    ir_module_free(m);

    /* the grid cannot see the body's values */
    m = ir_module_new("k.tile");
    f = new_kernel(m, &b, &x);
    IrVal body_val = ir_binary(&b, IR_ADD, x, x);
    ir_build(&b, IR_RETURN, NULL, 0, NULL, 0, NULL);
    IrBuilder gb = {0};
    ir_builder_at_end(&gb, f, ir_func_make_grid(f));
    ir_build(&gb, IR_YIELD, &body_val, 1, NULL, 0, NULL);
    expect_invalid_mod(m, "'yield': operand 0 is used where it is not defined");
    ir_module_free(m);
}

static void test_structure(void **state)
{
    (void)state;
    IrBuilder b;
    IrVal x;
    /* wrong operand count (the builder does not check) */
    IrModule *m = ir_module_new("k.tile");
    IrFunc *f = new_kernel(m, &b, &x);
    IrVal three[3] = {x, x, x};
    ir_build1(&b, IR_ADD, three, 3, ir_ty_scalar(DT_I32), NULL);
    ir_build(&b, IR_RETURN, NULL, 0, NULL, 0, NULL);
    expect_invalid_mod(m, "'add': 3 operands (expected 2 to 2)");
    ir_module_free(m);

    /* wrong result count */
    m = ir_module_new("k.tile");
    f = new_kernel(m, &b, &x);
    IrType two[2] = {ir_ty_scalar(DT_I32), ir_ty_scalar(DT_I32)};
    IrVal xx[2] = {x, x};
    ir_build(&b, IR_ADD, xx, 2, two, 2, NULL);
    ir_build(&b, IR_RETURN, NULL, 0, NULL, 0, NULL);
    expect_invalid_mod(m, "'add': 2 results (expected 1)");
    ir_module_free(m);

    /* an op listed in two blocks */
    m = ir_module_new("k.tile");
    f = new_kernel(m, &b, &x);
    ir_binary(&b, IR_ADD, x, x);
    ir_build(&b, IR_RETURN, NULL, 0, NULL, 0, NULL);
    IrBlock *blk = &f->blocks[f->body];
    uint32_t first = blk->ops[0];
    VEC_PUSH(blk->ops, blk->nops, blk->opcap, first);
    blk->ops[2] = blk->ops[1]; /* body: add, add, return */
    blk->ops[1] = first;
    expect_invalid_mod(m, "'add': op appears twice");
    ir_module_free(m);

    /* an op unlinked from its block without being marked dead */
    m = ir_module_new("k.tile");
    f = new_kernel(m, &b, &x);
    ir_binary(&b, IR_ADD, x, x);
    ir_build(&b, IR_RETURN, NULL, 0, NULL, 0, NULL);
    blk = &f->blocks[f->body];
    blk->ops[0] = blk->ops[1];
    blk->nops = 1;
    expect_invalid_mod(m, "'add': op is in no block but not marked dead");
    ir_module_free(m);

    /* the body's arguments must match the parameters */
    m = ir_module_new("k.tile");
    f = new_kernel(m, &b, &x);
    ir_build(&b, IR_RETURN, NULL, 0, NULL, 0, NULL);
    f->vals[x].ty = ir_ty_scalar(DT_I64);
    expect_invalid_mod(m, "the kernel body argument 0 is i64, expected i32");
    ir_module_free(m);

    /* the message names the pass given, and "none" without one */
    m = ir_module_new("k.tile");
    f = new_kernel(m, &b, &x);
    ir_binary(&b, IR_ADD, x, x);
    Diag d;
    diag_init(&d, "k.tile", NULL, 0, NULL, DIAG_COLOR_NEVER);
    d.capture = true;
    assert_false(ir_verify(f, &d, NULL));
    assert_non_null(strstr(d.buf.s, "IR verification failed after pass 'none': kernel @k: 'add': block ends in 'add'"));
    diag_free(&d);
    ir_module_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_golden_files_verify), cmocka_unit_test(test_valid_small),
        cmocka_unit_test(test_type_rules),          cmocka_unit_test(test_control_flow_rules),
        cmocka_unit_test(test_dominance),           cmocka_unit_test(test_structure),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
