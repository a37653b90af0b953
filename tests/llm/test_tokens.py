"""Sampled tokens back to ids through the model's vocabulary; compact log-probs."""

from polar.llm.tokens import Vocabulary, compact_logprobs, logprob_ids, server_root


def test_byte_level_bpe_pieces_map_to_their_ids():
    # GPT-2 style vocabularies spell a leading space as "Ġ" and a newline as "Ċ"
    v = Vocabulary(["{", "Ġ\"", "decision", "\":", "Ġ{", "Ċ", "pick", "up", "pickup"], "gpt2")
    assert v.ids(["{", " \"", "decision", "\":", " {", "\n"]) == [0, 1, 2, 3, 4, 5]
    assert v.ids(["pick", "up"]) == [6, 7]  # the sampled split, not the canonical "pickup"
    assert v.ids(["nope"]) is None


def test_sentencepiece_pieces_and_byte_fallback_map_to_their_ids():
    v = Vocabulary(["<unk>", "▁the", "▁door", "<0x7B>", "door"], "llama")
    assert v.ids([" the", " door", "{", "door"]) == [1, 2, 3, 4]


def test_compact_logprobs_and_server_root():
    lp = {"content": [{"token": "{", "logprob": -0.5, "top_logprobs": []}, {"token": "}", "logprob": 0.0}]}
    assert compact_logprobs(lp) == (["{", "}"], [-0.5, 0.0])
    assert compact_logprobs(None) is None and compact_logprobs({"content": []}) is None
    assert server_root("http://127.0.0.1:8012/v1/") == "http://127.0.0.1:8012"


def test_llama_servers_sampled_ids_are_read_from_its_logprobs():
    # llama-server names each sampled token's id, the end-of-turn token (empty text) included
    lp = {"content": [{"token": '{"', "logprob": -0.1, "id": 39428}, {"token": "", "logprob": -0.2, "id": 2}]}
    assert logprob_ids(lp) == [39428, 2]
    # llama-cpp-python's entries have no id: the ids come from elsewhere (vocabulary, tokenizer)
    assert logprob_ids({"content": [{"token": '{"', "logprob": -0.1}]}) is None
    assert logprob_ids({"content": [{"token": "a", "logprob": 0.0, "id": 5}, {"token": "b", "logprob": 0.0}]}) is None
    assert logprob_ids({"content": [{"token": "a", "logprob": 0.0, "id": True}]}) is None
    assert logprob_ids(None) is None and logprob_ids({"content": []}) is None
