package tidemark.spark;

import java.util.Iterator;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.catalog.procedures.BoundProcedure;
import org.apache.spark.sql.connector.catalog.procedures.ProcedureParameter;
import org.apache.spark.sql.connector.catalog.procedures.UnboundProcedure;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructType;

/**
 * One of tidemark's procedures: its name, what it does, its arguments (all required, in order)
 * and what a call does. Each takes the same arguments whatever it is bound to.
 */
abstract class Procedure implements UnboundProcedure, BoundProcedure {
    private final String name;
    private final String description;
    private final ProcedureParameter[] parameters;

    Procedure(String name, String description, String[] names, DataType[] types) {
        this.name = name;
        this.description = description;
        this.parameters = new ProcedureParameter[names.length];
        for (int i = 0; i < names.length; i++) {
            parameters[i] = ProcedureParameter.in(names[i], types[i]).build();
        }
    }

    public String name() {
        return name;
    }

    public String description() {
        return description;
    }

    public BoundProcedure bind(StructType inputType) {
        return this;
    }

    public ProcedureParameter[] parameters() {
        return parameters;
    }

    public boolean isDeterministic() {
        return false;
    }

    public abstract Iterator call(InternalRow input);
}
