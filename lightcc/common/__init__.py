"""Framework-independent pieces shared by every lightcc front (basics, process sets, ops)."""
