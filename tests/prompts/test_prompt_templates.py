import pytest

from polar.planners.base import PlannerContext
from polar.planners.llm import template_variables
from polar.prompts.templates import TemplateError, list_templates, load_template, load_template_file

GOOD = "---\nname: greet\nmode: any\ninputs: [who, items]\n---\nHello {{ who }}:{% for i in items %} {{ i }}{% endfor %}.\n"


def test_render_and_version_is_a_content_hash(tmp_path):
    p = tmp_path / "greet.j2"
    p.write_text(GOOD)
    t = load_template_file(p)
    assert (t.name, t.mode, t.inputs) == ("greet", "any", ("who", "items"))
    assert t.render({"who": "you", "items": [1, 2]}) == "Hello you: 1 2.\n"
    v1 = t.version
    p.write_text(GOOD.replace("Hello", "Hi"))
    assert load_template_file(p).version != v1 and len(v1) == 12
    p.write_text(GOOD)
    assert load_template_file(p).version == v1


def test_missing_variable_is_an_error_naming_it(tmp_path):
    p = tmp_path / "greet.j2"
    p.write_text(GOOD)
    with pytest.raises(TemplateError, match=r"'greet': missing input\(s\): items"):
        load_template_file(p).render({"who": "you"})
    p.write_text("---\nname: deep\ninputs: [skill]\n---\n{{ skill.nmae }}\n")
    with pytest.raises(TemplateError, match=r"'deep': undefined variable: .*nmae"):
        load_template_file(p).render({"skill": {"name": "goto"}})


def test_undeclared_variables_and_bad_front_matter_are_load_errors(tmp_path):
    p = tmp_path / "t.j2"
    p.write_text("---\nname: t\ninputs: [a]\n---\n{{ a }} {{ b }}\n")
    with pytest.raises(TemplateError, match="not listed in front matter inputs: b"):
        load_template_file(p)
    p.write_text("no front matter {{ a }}\n")
    with pytest.raises(TemplateError, match="no front matter"):
        load_template_file(p)
    p.write_text("---\nname: t\nmood: happy\n---\nx\n")
    with pytest.raises(TemplateError, match=r"mood: unknown key"):
        load_template_file(p)
    p.write_text("---\nname: t\n---\n{% for x in %}\n")
    with pytest.raises(TemplateError, match="line 1: Jinja syntax error"):
        load_template_file(p)


def test_workspace_template_overrides_the_default(tmp_path, monkeypatch):
    default = load_template("planner_skill")
    (tmp_path / "prompts").mkdir()
    (tmp_path / "prompts" / "planner_skill.j2").write_text(
        "---\nname: planner_skill\nmode: skill\ninputs: [task]\n---\nDo: {{ task }}\n")
    monkeypatch.chdir(tmp_path)
    mine = load_template("planner_skill")
    assert mine.version != default.version and mine.render({"task": "x"}) == "Do: x\n"
    assert {t.name for t in list_templates()} >= {"planner_system", "planner_skill", "planner_code"}
    with pytest.raises(TemplateError, match="no prompt template named 'nope'"):
        load_template("nope")


def test_default_templates_render_the_example_context():
    from pathlib import Path

    ctx_path = Path(__file__).resolve().parents[2] / "prompts" / "examples" / "doorkey_context.json"
    ctx = PlannerContext.model_validate_json(ctx_path.read_text())
    for mode in ("plan", "skill", "code", "auto"):
        variables = template_variables(ctx, mode)
        text = load_template(f"planner_{mode}").render(variables)
        assert ctx.task in text and "Step limit: 640" in text
        system = load_template("planner_system").render(variables)
        assert '"kind": "finish"' in system
        assert ('"kind": "code"' in system) == (mode in ("code", "auto"))
