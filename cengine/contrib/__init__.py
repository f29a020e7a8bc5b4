"""Adapters of cengine for other engines: transformers (`cengine.contrib.hf`), SGLang
(`cengine.contrib.sglang`), vLLM (`cengine.contrib.vllm`), and xgrammar's structural-tag
format (`cengine.contrib.structural_tag`, which imports no engine). docs/integrations.md.

Each adapter imports its engine (and torch) in its own module only: `import cengine` and
`import cengine.contrib` never do.
"""
