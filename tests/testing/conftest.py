"""The pytest plugin's tests run example test files as users write them, with pytester."""

pytest_plugins = ["pytester"]
