"""The one predicate matching rule: wildcards, arity, negation, effects."""

import pytest

from polar.predicates import achieved, fill, holds, matches, parse


def test_parse_and_canonical_spelling():
    assert parse("not carrying( key , any )") == (True, "carrying", ("key", "any"))
    assert parse("front_clear") == (False, "front_clear", ())
    assert parse("not carrying(key, any)").positive == "carrying(key,any)"
    with pytest.raises(ValueError, match="expected name"):
        parse("carrying(")


def test_holds_wildcards():
    assert holds("carrying(ball,any)", ["carrying(ball,red)"])
    assert holds("carrying(ball,*)", ["carrying(ball,red)"])
    assert not holds("carrying(ball,any)", ["carrying(key,red)"])
    assert holds("at(goal)", {"at(goal)"})


def test_arity_trailing_wildcards_match_fewer_arguments_only():
    assert matches("facing(goal,any)", "facing(goal)")
    assert not matches("facing(goal,red)", "facing(goal)")
    assert not matches("facing(goal)", "facing(goal,red)")  # a pattern never ignores arguments
    assert holds("adjacent(ball,any,key,blue)", ["adjacent(ball,red,key,blue)"])
    assert not holds("adjacent(ball,any,key,red)", ["adjacent(ball,red,key,blue)"])


def test_negation():
    assert holds("not carrying(any,any)", ["facing(key,red)"])
    assert not holds("not carrying(any,any)", ["carrying(key,red)"])


def test_fill_unset_parameters_become_wildcards():
    assert fill("facing({object},{color})", {"object": "key"}) == "facing(key,any)"


def test_achieved_effects():
    assert achieved("carrying(key,any)", [], ["carrying(key,red)"])
    assert not achieved("carrying(key,any)", ["carrying(key,red)"], ["carrying(key,red)"])  # held before
    assert achieved("not carrying(key,any)", ["carrying(key,red)"], [])
    assert not achieved("not carrying(key,any)", [], [])
