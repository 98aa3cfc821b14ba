# shellcheck shell=bash
# placeholder, written once the engine's policy format is known
