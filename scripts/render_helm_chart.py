#!/usr/bin/env python3
"""Renders a Helm chart's templates the way `helm template` does, for the
subset of Helm the chart under dist/helm uses: Go text/template with the
sprig functions (py-go-template), `.Values` (values.yaml deep-merged with
each --values file), `.Release` and `.Chart`, and `define`d helpers from
every `_*.tpl` file. A reference to a value that does not exist fails
(the renderer runs with missingkey=error).

Prints a JSON list of {"template": name, "document": parsed YAML}, and
with --out-dir writes each rendered template there (for yamllint).
"""
import argparse
import json
import sys
import tempfile
from pathlib import Path

import yaml
from go_template import render


def deep_merge(base, override):
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            deep_merge(base[key], value)
        else:
            base[key] = value
    return base


def chart_context(chart_dir, value_files, release, namespace):
    chart = yaml.safe_load((chart_dir / "Chart.yaml").read_text())
    values = yaml.safe_load((chart_dir / "values.yaml").read_text()) or {}
    for path in value_files:
        deep_merge(values, yaml.safe_load(Path(path).read_text()) or {})
    return {
        "Values": values,
        "Release": {
            "Name": release,
            "Namespace": namespace,
            "Service": "Helm",
            "IsInstall": True,
            "IsUpgrade": False,
        },
        "Chart": {
            "Name": chart["name"],
            "Version": chart["version"],
            "AppVersion": chart.get("appVersion", ""),
        },
    }


def render_template(helpers, template, context):
    with tempfile.TemporaryDirectory() as scratch:
        source = Path(scratch) / template.name
        source.write_text(helpers + template.read_text())
        text = render(source, context).decode()
    # The library reports a failure as its output text.
    if text.startswith(("parse template failed", "render template failed")):
        raise SystemExit(f"{template.name}: {text}")
    return text


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("chart", type=Path)
    parser.add_argument("--values", action="append", default=[])
    parser.add_argument("--release", default="iggy")
    parser.add_argument("--namespace", default="default")
    parser.add_argument("--out-dir", type=Path)
    args = parser.parse_args()
    context = chart_context(args.chart, args.values, args.release, args.namespace)
    templates = args.chart / "templates"
    helpers = "".join(p.read_text() for p in sorted(templates.glob("_*.tpl")))
    rendered = []
    for template in sorted(templates.glob("*.yaml")):
        text = render_template(helpers, template, context)
        if args.out_dir:
            args.out_dir.mkdir(parents=True, exist_ok=True)
            (args.out_dir / template.name).write_text(text.lstrip("\n"))
        for document in yaml.safe_load_all(text):
            if document is not None:
                rendered.append({"template": template.name, "document": document})
    json.dump(rendered, sys.stdout)


if __name__ == "__main__":
    main()
