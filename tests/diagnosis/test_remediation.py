"""What to do next must be right for the log at hand: the op it names, the ABI the symbol shows,
the precision the run already uses, advice that is current for DeepSpeed 0.16-0.19 / torch 2.x."""

from conftest import DEMO, diagnose_json

FLASH_SO = "/opt/conda/lib/python3.10/site-packages/flash_attn_2_cuda.cpython-310-x86_64-linux-gnu.so"
CXX11_SYMBOL = ("_ZN3c106detail14torchCheckFailEPKcS2_jRKNSt7__cxx1112basic_stringIcSt11char_traits"
                "IcESaIcEEE")


def _steps(tmp_path, *lines):
    path = tmp_path / "job.log"
    path.write_text("\n".join(lines) + "\n")
    _, d = diagnose_json(path)
    return d, "\n".join(d["remediation"])


def test_flash_attn_rebuild_keeps_the_installed_torch(tmp_path):
    d, text = _steps(tmp_path, "Traceback (most recent call last):",
                     '  File "/workspace/train.py", line 4, in <module>',
                     "    import flash_attn",
                     f"ImportError: {FLASH_SO}: undefined symbol: _ZN3c104cuda9SetDeviceEi")
    assert d["category"] == "version_mismatch" and d["facts"]["extension"] == "flash-attn"
    assert "pip install flash-attn --no-build-isolation" in text
    assert "_GLIBCXX_USE_CXX11_ABI" not in text  # nothing in this symbol says the ABI differs


def test_a_cxx11_symbol_gets_the_abi_hint(tmp_path):
    d, text = _steps(tmp_path, f"ImportError: {FLASH_SO}: undefined symbol: {CXX11_SYMBOL}")
    assert "torch._C._GLIBCXX_USE_CXX11_ABI" in text and "cxx11abiFALSE" in text
    assert "--no-build-isolation" in text


def test_op_build_names_the_op_to_precompile(tmp_path):
    d, text = _steps(tmp_path, "Traceback (most recent call last):",
                     "RuntimeError: Error building extension 'cpu_adam'")
    assert d["category"] == "op_build_error" and d["facts"]["op_build_var"] == "DS_BUILD_CPU_ADAM"
    assert "DS_BUILD_CPU_ADAM=1 pip install deepspeed --no-build-isolation" in text
    assert "DS_BUILD_OPS=1 pip install" not in text


def test_a_prebuilt_op_with_a_missing_symbol_names_its_switch(tmp_path):
    lib = "/root/.cache/torch_extensions/py310_cu121/fused_adam/fused_adam.so"
    d, text = _steps(tmp_path, f"ImportError: {lib}: undefined symbol: _ZN3c104cuda9SetDeviceEi")
    assert "DS_BUILD_FUSED_ADAM=1 pip install deepspeed" in text


def test_gpu_oom_advice_does_not_blame_zero3_or_offer_ds_checkpointing_to_hf(tmp_path):
    _, d = diagnose_json(DEMO)
    text = "\n".join(d["remediation"])
    assert "textbook" not in text and "most frugal" in text
    assert "gradient_checkpointing_enable()" in text
    assert "does nothing for them" in text  # DeepSpeed's activation_checkpointing section


def test_offload_ram_is_partitioned_over_ranks_not_per_node(tmp_path):
    _, text = _steps(tmp_path, "RuntimeError: [enforce fail at alloc_cpu.cpp:114] data. "
                               "DefaultCPUAllocator: not enough memory: you tried to allocate 34359738368 bytes.")
    assert "partitioned over the data-parallel ranks" in text and "per parameter per node" not in text


NAN_STEP = "{'loss': nan, 'grad_norm': nan, 'learning_rate': 1.9e-05, 'epoch': 0.12}"


# A NaN loss alone is unknown (fp16_overflow.nan_loss is an echo): its steps lead the answer.
def test_no_switch_to_bf16_for_a_nan_in_a_bf16_run(tmp_path):
    d, text = _steps(tmp_path,
                     "[2024-05-01 09:00:00,100] [INFO] [config.py:1003:print]   bfloat16_config "
                     ".............. enabled=True immediate_grad_update=False check_grad_overflow=False",
                     "{'loss': 2.1, 'grad_norm': 1.3, 'learning_rate': 1.9e-05, 'epoch': 0.1}", NAN_STEP)
    assert d["category"] == "unknown" and d["evidence"][0]["text"] == NAN_STEP
    assert "switch to bf16" not in text and "this run trains in bf16" in text and "set_detect_anomaly" in text


def test_a_nan_in_an_fp16_or_unknown_precision_run_may_switch_to_bf16(tmp_path):
    d, text = _steps(tmp_path, NAN_STEP)
    assert d["category"] == "unknown" and d["evidence"][0]["text"] == NAN_STEP
    assert "switch to bf16" in text and "this run trains in bf16" not in text


def test_cpu_only_torch_points_at_a_current_wheel_index(tmp_path):
    d, text = _steps(tmp_path, "AssertionError: Torch not compiled with CUDA enabled")
    assert d["category"] == "version_mismatch"
    assert "whl/cu128" in text and "cu121" not in text
