"""The README's PyTorch example runs verbatim from the repository root."""
import os
import re
import subprocess
import sys

from conftest import REPO


def test_readme_pytorch_example_runs():
    with open(os.path.join(REPO, "README.md")) as f:
        readme = f.read()
    section = readme[readme.index("## PyTorch"):]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    run = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, env=os.environ)
    assert run.returncode == 0, run.stderr
    assert "mingru(k[d]: float32, u[d]: float32) -> h[d]: float32" in run.stdout
    assert "torch.Size([2, 64, 16]) torch.Size([2, 16]) torch.Size([2, 64, 16])" in run.stdout
