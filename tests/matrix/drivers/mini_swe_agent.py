"""mini-swe-agent 2.x with its tool-calling configuration (`mini.yaml`): one `bash` tool whose
results go back as JSON envelopes (`{"returncode": ..., "output": ...}`), run with its
LocalEnvironment in the repository. What its user sees is the trajectory's messages."""

from __future__ import annotations

import os

os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"  # no fetch of litellm's price list from the network
os.environ["MSWEA_CONFIGURED"] = "true"
import yaml
from common import TASK, args, report
from minisweagent.agents.default import DefaultAgent
from minisweagent.config import builtin_config_dir
from minisweagent.environments.local import LocalEnvironment
from minisweagent.models.litellm_model import LitellmModel

base, mode = args()
config = yaml.safe_load((builtin_config_dir / "mini.yaml").read_text())
model = LitellmModel(
    model_name="openai/m",
    model_kwargs={**config["model"].get("model_kwargs", {}), "api_base": f"{base}/v1", "api_key": "sk-matrix"},
    cost_tracking="ignore_errors",
    observation_template=config["model"]["observation_template"],
    format_error_template=config["model"]["format_error_template"],
)
if mode == "plain":
    message = model._query([{"role": "user", "content": "hi"}]).choices[0].message  # offers its bash tool
    report(str(message.content or ""), called=bool(message.tool_calls))
else:
    agent_config = {k: v for k, v in config["agent"].items() if k != "mode"}
    agent = DefaultAgent(model, LocalEnvironment(cwd=os.getcwd()), **{**agent_config, "step_limit": 8})
    ended = agent.run(TASK)  # its exit message: status and submission
    report(str(ended.get("submission", "")), exit=ended.get("exit_status"))
