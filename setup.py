"""Packaging for accel-launch: the launcher, the accelerator API, and the console scripts."""

from setuptools import find_packages, setup

setup(
    name="accel-launch",
    version="0.1.0",
    description="Launch PyTorch jobs on any accelerator with one validated torch.compile backend.",
    python_requires=">=3.11",
    packages=find_packages(include=["launcher", "launcher.*", "accelerators", "accelerators.*"]),
    install_requires=[
        # The floor is the release the suite runs on (the engine path passes torch 2.13's WorkerSpec
        # fields; tests/test_version_floor.py); a range the CPU wheel 2.13.0 satisfies, so an installed
        # torch is kept as it is.
        "torch>=2.13,<3",
        "click>=8.1",
        "python-dotenv>=1.0",
        "psutil>=5.9",
    ],
    extras_require={
        "test": [
            "pytest>=8",
            "pytest-timeout>=2.3",
            "pytest-xdist>=3.5",
            "hypothesis>=6.100",
            "numpy",
            # The DeepSpeed tests run the real engine on CPU (a pure-Python sdist: builds without torch).
            "deepspeed>=0.19,<0.20",
            # The real-scripts corpus trains a tiny model, built from a config, with HF's Trainer.
            "transformers>=5,<6",
            "accelerate>=1.10,<2",
        ],
    },
    entry_points={
        "console_scripts": [
            "accel-launch=launcher.cli.start:main",
            "accel-report=launcher.cli.start:report_main",
        ],
    },
)
