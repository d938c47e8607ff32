# Conveniences; the README's two commands do not need make.
.PHONY: demo test bench venv

venv:
	python3 -m venv .venv && .venv/bin/pip install -q -e '.[test]'

demo: venv
	.venv/bin/physmocap demo

test: venv
	.venv/bin/python -m pytest -q -n auto

bench: venv
	.venv/bin/python benchmarks/bvh_read.py
