"""Renderers, one module per output format; each takes the diagnosis dict."""

FORMATS = ("text", "json", "markdown")


def render(diagnosis, fmt, stream, color=None):
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
