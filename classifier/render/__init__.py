"""Renderers, one module per output format; each takes the diagnosis dict."""

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing: ~2 ms of every start
if TYPE_CHECKING:
    from typing import Any, TextIO

FORMATS = ("text", "json", "markdown")


def render(diagnosis: "dict[str, Any]", fmt: str, stream: "TextIO",
           color: bool | None = None) -> None:
    """Write the diagnosis to `stream` in the chosen format."""
    if fmt == "json":
        from classifier.render.json import render_json
        render_json(diagnosis, stream)
    elif fmt == "markdown":
        from classifier.render.markdown import render_markdown
        render_markdown(diagnosis, stream)
    else:
        from classifier.render.text import render_text
        render_text(diagnosis, stream, color=color)
