"""Context-aware decoding (specs/rag-zeval.md §2.4, O12): the worked example, and greedy CAD on a tiny
random-weight Llama checked against plain greedy decoding, a hand-made contrast and a no-cache recomputation."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from evigraph.agents.rag_zeval.cad import CadOutput, cad_generate, contrast_logits, default_eos_ids

torch = pytest.importorskip("torch")

ALPHAS = (0.0, -0.5, -1.0, -1.4)
CTX = [2.0, 1.0, 0.0]
NOCTX = [1.0, 1.2, 1.1]
TABLE = {  # §2.4 worked example: alpha -> (combined logits, softmax, greedy token)
    0.0: ([2.0, 1.0, 0.0], [0.6652, 0.2447, 0.0900], 0),
    -0.5: ([1.5, 1.1, 0.55], [0.4861, 0.3259, 0.1880], 0),
    -1.0: ([1.0, 1.2, 1.1], [0.3006, 0.3672, 0.3322], 1),
    -1.4: ([0.6, 1.28, 1.54], [0.1807, 0.3567, 0.4626], 2),
}


# ------------------------------------------------------------------------------------------ worked example


@pytest.mark.parametrize("alpha", list(TABLE))
def test_worked_example_row(alpha: float) -> None:
    combined = contrast_logits(torch.tensor(CTX, dtype=torch.float64), torch.tensor(NOCTX, dtype=torch.float64), alpha)
    logits, probabilities, token = TABLE[alpha]
    assert combined.tolist() == pytest.approx(logits, abs=1e-12)
    assert [round(p, 4) for p in torch.softmax(combined, dim=-1).tolist()] == probabilities
    assert int(combined.argmax()) == token


def test_worked_example_batched_over_alpha() -> None:
    alphas = torch.tensor(list(TABLE), dtype=torch.float64).unsqueeze(1)  # (4, 1) against (3,) logits
    combined = contrast_logits(torch.tensor(CTX, dtype=torch.float64), torch.tensor(NOCTX, dtype=torch.float64), alphas)
    assert combined.shape == (4, 3)
    expected = torch.tensor([row[0] for row in TABLE.values()], dtype=torch.float64)
    assert torch.allclose(combined, expected, atol=1e-12)
    assert combined.argmax(dim=-1).tolist() == [0, 0, 1, 2]
    # one alpha per row of a (4, 3) batch gives the same
    rows = contrast_logits(
        torch.tensor([CTX] * 4, dtype=torch.float64), torch.tensor([NOCTX] * 4, dtype=torch.float64), alphas
    )
    assert torch.equal(rows, combined)


def test_worked_example_beta_form() -> None:
    alpha = -1.4
    beta = (1 + alpha) / alpha
    assert beta == pytest.approx(0.285714, abs=1e-6)
    ctx, noctx = torch.tensor(CTX, dtype=torch.float64), torch.tensor(NOCTX, dtype=torch.float64)
    beta_form = (-alpha) * (noctx - beta * ctx)
    assert beta_form.tolist() == pytest.approx([0.6, 1.28, 1.54], abs=1e-12)
    assert torch.allclose(beta_form, contrast_logits(ctx, noctx, alpha))
    # the positive factor -alpha does not move the argmax
    assert int((noctx - beta * ctx).argmax()) == int(beta_form.argmax()) == 2


def test_importing_the_module_does_not_need_torch_at_import_time() -> None:
    import subprocess
    import sys

    code = "import sys, evigraph.agents.rag_zeval.cad as m; print('torch' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"


# ------------------------------------------------------------------------------------------------ tiny model


@pytest.fixture(scope="module")
def tiny(tiny_llama_dir: Path) -> tuple[Any, Any]:
    transformers = pytest.importorskip("transformers")
    model = transformers.AutoModelForCausalLM.from_pretrained(tiny_llama_dir, dtype=torch.float32).eval()
    tokenizer = transformers.AutoTokenizer.from_pretrained(tiny_llama_dir)
    return model, tokenizer


@pytest.fixture(scope="module")
def prompts(tiny: tuple[Any, Any]) -> tuple[list[int], list[int]]:
    from evigraph.agents.rag_zeval.synthesis_prompts import encode_prompts

    _, tokenizer = tiny
    return encode_prompts(
        tokenizer,
        "who painted the ceiling of the sistine chapel",
        "The ceiling of the Sistine Chapel was painted by Michelangelo between 1508 and 1512.",
    )


def _logits(model: Any, ids: list[int]) -> Any:
    with torch.inference_mode():
        return model(input_ids=torch.tensor([ids])).logits[0, -1].float()


def test_alpha_zero_is_plain_greedy_decoding(tiny: tuple[Any, Any], prompts: tuple[list[int], list[int]]) -> None:
    model, tokenizer = tiny
    with_ids, without_ids = prompts
    outputs = cad_generate(model, tokenizer, with_ids, without_ids, ALPHAS, max_new_tokens=24, stop_strings=())
    eos = sorted(default_eos_ids(model, tokenizer))
    for alpha, prompt, output in ((0.0, with_ids, outputs[0]), (-1.0, without_ids, outputs[2])):
        with torch.inference_mode():
            plain = model.generate(
                torch.tensor([prompt]), do_sample=False, max_new_tokens=24, eos_token_id=eos, pad_token_id=eos[0]
            )
        expected = plain[0, len(prompt) :].tolist()
        got = list(output.token_ids) + ([expected[-1]] if output.finish_reason == "eos" else [])
        assert output.alpha == alpha
        assert got == expected  # alpha 0: with-context greedy; alpha -1: no-context greedy
    assert outputs[0].text == tokenizer.decode(outputs[0].token_ids, skip_special_tokens=True)


def test_first_token_is_the_argmax_of_the_contrast(tiny: tuple[Any, Any], prompts: tuple[list[int], list[int]]) -> None:
    model, tokenizer = tiny
    with_ids, without_ids = prompts
    ctx, noctx = _logits(model, with_ids), _logits(model, without_ids)
    alphas = (0.0, -0.5, -1.0, -1.4, -3.0, 0.5)
    outputs = cad_generate(model, tokenizer, with_ids, without_ids, alphas, max_new_tokens=1, stop_strings=())
    expected = [int(contrast_logits(ctx, noctx, a).argmax()) for a in alphas]
    assert [o.token_ids[0] for o in outputs] == expected
    assert all(o.finish_reason == "length" and len(o.token_ids) == 1 for o in outputs)
    assert len(set(expected)) > 1, "the contrast should change the choice on this model"


def test_cached_path_matches_a_full_recomputation(tiny: tuple[Any, Any], prompts: tuple[list[int], list[int]]) -> None:
    model, tokenizer = tiny
    with_ids, without_ids = prompts
    steps = 6
    outputs = cad_generate(model, tokenizer, with_ids, without_ids, ALPHAS, max_new_tokens=steps, stop_strings=())
    for alpha, output in zip(ALPHAS, outputs, strict=True):
        prefix: list[int] = []
        for _ in range(steps):
            combined = contrast_logits(_logits(model, with_ids + prefix), _logits(model, without_ids + prefix), alpha)
            prefix.append(int(combined.argmax()))
        assert list(output.token_ids) == prefix, f"alpha {alpha}"
    assert len({o.token_ids for o in outputs}) > 1


def test_batched_over_alpha_equals_one_alpha_at_a_time(
    tiny: tuple[Any, Any], prompts: tuple[list[int], list[int]]
) -> None:
    model, tokenizer = tiny
    with_ids, without_ids = prompts
    batched = cad_generate(model, tokenizer, with_ids, without_ids, ALPHAS, max_new_tokens=20, stop_strings=())
    for alpha, output in zip(ALPHAS, batched, strict=True):
        (alone,) = cad_generate(model, tokenizer, with_ids, without_ids, [alpha], max_new_tokens=20, stop_strings=())
        assert alone == output
    # prompts given as tensors, (L,) or (1, L), decode the same
    again = cad_generate(
        model,
        tokenizer,
        torch.tensor([with_ids]),
        torch.tensor(without_ids),
        ALPHAS,
        max_new_tokens=20,
        stop_strings=(),
    )
    assert again == batched


def test_stop_string_ends_a_row_and_is_cut_from_its_text(
    tiny: tuple[Any, Any], prompts: tuple[list[int], list[int]]
) -> None:
    model, tokenizer = tiny
    with_ids, without_ids = prompts
    full = cad_generate(model, tokenizer, with_ids, without_ids, ALPHAS, max_new_tokens=30, stop_strings=())
    text = full[0].text
    stop = text[len(text) // 2 : len(text) // 2 + 4]
    assert len(stop) == 4 and stop.strip()
    cut = cad_generate(model, tokenizer, with_ids, without_ids, ALPHAS, max_new_tokens=30, stop_strings=("@@@", stop))
    for whole, part in zip(full, cut, strict=True):
        if stop in whole.text:
            assert part.finish_reason == "stop"
            assert part.text == whole.text[: whole.text.index(stop)]
            assert whole.token_ids[: len(part.token_ids)] == part.token_ids  # the tokens spelling it are kept
            assert stop in tokenizer.decode(part.token_ids, skip_special_tokens=True)
            assert stop not in tokenizer.decode(part.token_ids[:-1], skip_special_tokens=True)
        else:  # rows that never spell it are not disturbed by the others stopping
            assert part == whole
    assert cut[0].finish_reason == "stop" and len(cut[0].token_ids) < 30


def test_eos_ends_rows_independently(tiny: tuple[Any, Any], prompts: tuple[list[int], list[int]]) -> None:
    model, tokenizer = tiny
    with_ids, without_ids = prompts
    full = cad_generate(model, tokenizer, with_ids, without_ids, ALPHAS, max_new_tokens=16, stop_strings=(), eos_ids=())
    assert all(o.finish_reason == "length" and len(o.token_ids) == 16 for o in full)
    end = full[1].token_ids[3]  # alpha -0.5's 4th token now counts as EOS
    ended = cad_generate(
        model, tokenizer, with_ids, without_ids, ALPHAS, max_new_tokens=16, stop_strings=(), eos_ids=[end]
    )
    for whole, part in zip(full, ended, strict=True):
        if end in whole.token_ids:
            expected = whole.token_ids[: whole.token_ids.index(end)]
            assert (part.token_ids, part.finish_reason) == (expected, "eos")
            assert part.text == tokenizer.decode(expected, skip_special_tokens=True)
        else:
            assert part == whole
    assert len(ended[1].token_ids) <= 3


def test_edge_arguments(tiny: tuple[Any, Any], prompts: tuple[list[int], list[int]]) -> None:
    model, tokenizer = tiny
    with_ids, without_ids = prompts
    assert cad_generate(model, tokenizer, with_ids, without_ids, []) == []
    with pytest.raises(ValueError, match="max_new_tokens"):
        cad_generate(model, tokenizer, with_ids, without_ids, [0.0], max_new_tokens=0)
    with pytest.raises(ValueError, match="non-empty"):
        cad_generate(model, tokenizer, [], without_ids, [0.0])
    assert tokenizer.eos_token_id in default_eos_ids(model, tokenizer)
    output = cad_generate(model, tokenizer, with_ids, without_ids, [0.0], max_new_tokens=2)[0]
    assert isinstance(output, CadOutput) and output.alpha == 0.0
