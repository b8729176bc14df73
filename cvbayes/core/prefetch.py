"""A cache hint for numba kernels that jump around memory."""
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic


@intrinsic
def prefetch(typingctx, array, row):
    """Ask the processor to start loading the cache line of ``array[row, 0, ...]`` (LLVM's
    llvm.prefetch, for reading, kept in every cache level); returns nothing and never faults, whatever
    ``row``.  A kernel that will read a row it can name some steps ahead (the SparseLDA sampler's next
    tokens' word lists) hides the wait for memory behind the work in between."""
    if not isinstance(array, types.Array) or not isinstance(row, types.Integer):
        return None

    def codegen(context, builder, signature, args):
        view = context.make_array(array)(context, builder, args[0])
        zero = context.get_constant(types.intp, 0)
        index = [context.cast(builder, args[1], row, types.intp)] + [zero] * (array.ndim - 1)
        pointer = cgutils.get_item_pointer(context, builder, array, view, index, wraparound=False)
        byte_pointer = ir.IntType(8).as_pointer()
        int32 = ir.IntType(32)
        hint = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(ir.VoidType(), [byte_pointer, int32, int32, int32]), "llvm.prefetch.p0i8")
        builder.call(hint, [builder.bitcast(pointer, byte_pointer), int32(0), int32(3), int32(1)])
        return context.get_dummy_value()

    return types.void(array, row), codegen
