"""Build of cengine's Cython extensions (metadata lives in pyproject.toml)."""
import numpy
from Cython.Build import cythonize
from setuptools import Extension, setup

COMPILE_ARGS = ["-O3", "-fno-strict-aliasing"]
# the automaton builder: the Builder (_build) and the modules of its phases
BUILDER_MODULES = ("_build", "_build_hash", "_build_ir", "_build_utf8", "_build_nfa",
                   "_build_inline", "_build_positions", "_build_dfa", "_build_minimize",
                   "_build_analyses", "_build_pack")

extensions = [
    Extension(f"cengine.{name}", [f"cengine/{name}.pyx"],
              include_dirs=[numpy.get_include()],
              define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
              extra_compile_args=COMPILE_ARGS)
    # the matcher; the mask's bitmask helpers, token trie, per-position tables, slice search
    # and walks
    for name in ("_matcher", "_bitmask", "_trie", "_tables", "_slices", "_mask")
] + [
    # the automaton builder's kernels use C++ containers (vectors, hash maps): the Builder
    # (_build) and its phases, one module each (docs/architecture.md)
    Extension(f"cengine.{name}", [f"cengine/{name}.pyx"], language="c++",
              extra_compile_args=COMPILE_ARGS + ["-std=c++11"])
    for name in BUILDER_MODULES
] + [
    # the states of an any-order object, made into positions directly
    Extension("cengine._anyorder", ["cengine/_anyorder.pyx"], language="c++",
              extra_compile_args=COMPILE_ARGS + ["-std=c++11"]),
    # the free keys of an open object (the trie of the names), made into positions directly
    Extension("cengine._keytrie", ["cengine/_keytrie.pyx"], language="c++",
              extra_compile_args=COMPILE_ARGS + ["-std=c++11"]),
    # the minimal DFA of a finite set of strings (a schema's enum values)
    Extension("cengine._strset", ["cengine/_strset.pyx"], language="c++",
              extra_compile_args=COMPILE_ARGS + ["-std=c++11"]),
    # a bounded number's automaton (explored, minimized), cengine.schema.numbers
    Extension("cengine._numdfa", ["cengine/_numdfa.pyx"], language="c++",
              extra_compile_args=COMPILE_ARGS + ["-std=c++11"]),
]

setup(
    ext_modules=cythonize(
        extensions,
        language_level=3,
        compiler_directives={"boundscheck": False, "wraparound": False, "cdivision": True,
                             "initializedcheck": False,
                             # signatures in docstrings: the .pyi stubs are checked against them
                             "embedsignature": True},
    ),
    package_data={"cengine": ["*.pyx", "*.pxd", "*.pyi", "py.typed"]},
)
