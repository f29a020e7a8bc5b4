"""Adapters of cengine for other engines (transformers: `cengine.contrib.hf`).

Each adapter imports its engine (and torch) in its own module only: `import cengine` never
does.
"""
