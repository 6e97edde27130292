"""Leave case ARGV[1] of error_file_cases.py at $TORCHELASTIC_ERROR_FILE, then exit with status ARGV[2]."""

import os
import sys

from _rank import mark_started
from error_file_cases import leave

mark_started()
leave(os.environ["TORCHELASTIC_ERROR_FILE"], sys.argv[1])
sys.exit(int(sys.argv[2]))
